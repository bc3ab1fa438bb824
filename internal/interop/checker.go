package interop

import (
	"encoding/json"
	"fmt"
	"sync"
)

// A Checker validates the frames of one connection in order. It remembers which
// method each request id called, so it can check a response payload against that
// method's result definition. It is safe for concurrent use.
type Checker struct {
	frames   *Schema // frames and request params
	payloads *Schema // ok response payloads and event payloads

	mu      sync.Mutex        // guards the field that follows
	pending map[string]string // request id → method
}

// NewChecker returns a Checker that checks frames and request params with frames,
// and response and event payloads with payloads. Pass frames itself as payloads
// for the published contract, or frames.Lenient() to accept extra payload fields
// as the reference gateway sends them.
func NewChecker(frames, payloads *Schema) *Checker {
	return &Checker{frames: frames, payloads: payloads, pending: map[string]string{}}
}

// envelope holds the frame fields the Checker dispatches on.
type envelope struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Method  string          `json:"method"`
	Event   string          `json:"event"`
	OK      bool            `json:"ok"`
	Params  json.RawMessage `json:"params"`
	Payload json.RawMessage `json:"payload"`
}

// Client checks a frame sent by the client: the frame, and for a request its
// params (unless the method is not in the methods map, which a test may do on
// purpose).
func (c *Checker) Client(frame []byte) error {
	if err := c.frames.ValidateFrame(frame); err != nil {
		return err
	}
	var f envelope
	if err := json.Unmarshal(frame, &f); err != nil {
		return fmt.Errorf("interop: client frame: %w", err)
	}
	if f.Type != "req" {
		return nil
	}
	c.mu.Lock()
	c.pending[f.ID] = f.Method
	c.mu.Unlock()
	if _, known := c.frames.Method(f.Method); !known {
		return nil
	}
	return c.frames.ValidateParams(f.Method, f.Params)
}

// Server checks a frame sent by the server: the frame; for an ok response the
// payload against the result definition of the method the client called (a
// response to an id the Checker has not seen requested is an error); for an event
// its payload.
func (c *Checker) Server(frame []byte) error {
	if err := c.frames.ValidateFrame(frame); err != nil {
		return err
	}
	var f envelope
	if err := json.Unmarshal(frame, &f); err != nil {
		return fmt.Errorf("interop: server frame: %w", err)
	}
	switch f.Type {
	case "res":
		c.mu.Lock()
		method, ok := c.pending[f.ID]
		delete(c.pending, f.ID)
		if ok && method == "agent" && f.OK && acceptedOnly(f.Payload) {
			// The reference answers "agent" twice: {status:"accepted"} at
			// once, then the final result on the same id (callers use
			// expectFinal).
			c.pending[f.ID] = method
		}
		c.mu.Unlock()
		if !ok {
			return fmt.Errorf("interop: response to unknown request id %q", f.ID)
		}
		if !f.OK {
			return nil // the error shape is part of the frame schema
		}
		if _, known := c.payloads.Method(method); !known {
			return nil
		}
		return c.payloads.ValidateResult(method, f.Payload)
	case "event":
		return c.payloads.ValidateEvent(f.Event, f.Payload)
	}
	return nil
}

// Pending returns the methods of requests that have had no response yet, by id.
func (c *Checker) Pending() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]string, len(c.pending))
	for id, method := range c.pending {
		m[id] = method
	}
	return m
}

// acceptedOnly reports whether an agent response is the first, "accepted" one.
func acceptedOnly(payload json.RawMessage) bool {
	var p struct {
		Status string `json:"status"`
	}
	return json.Unmarshal(payload, &p) == nil && p.Status == "accepted"
}
