// Package client is a Go client for the Switchboard gateway's WebSocket
// protocol (the OpenClaw-compatible protocol 3/4): it performs the
// connect.challenge/connect handshake, sends requests, matches responses and
// delivers events. The CLI, the benchmark harness and tests use it. It
// imports only gateway/wire.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// DefaultURL is the gateway's default address.
const DefaultURL = "ws://127.0.0.1:18789"

// Options configures Dial.
type Options struct {
	// URL of the gateway, ws:// or wss://; empty means DefaultURL.
	URL string
	// Token or Password is the gateway's shared secret.
	Token    string
	Password string
	// ClientID, Mode and Version describe this client in connect; defaults
	// "cli", "cli", "switchboard".
	ClientID string
	Mode     string
	Version  string
	// Scopes requested; nil means operator.read, write and admin.
	Scopes []string
	// MinProtocol and MaxProtocol; zero means 3 and 4.
	MinProtocol, MaxProtocol int
	// EventBuffer is how many events may wait unread; further events are
	// dropped (see Dropped). Zero means 4096.
	EventBuffer int
	// SessionScoped declares the "session-scoped-events" capability: the
	// gateway then sends chat and agent events only of the sessions this
	// client sends to or subscribes to (sessions.messages.subscribe),
	// instead of every session's.
	SessionScoped bool
	// Caps are further client capabilities declared in connect, such as
	// "exec-approvals" (receive and answer exec approvals).
	Caps []string
	// KeepEvent, when set, sees each event frame after the handshake as
	// the gateway sent it (its JSON text) and says whether to deliver it; the others are
	// dropped without being decoded, and not counted in Dropped. A reader
	// that wants few of the events it receives (the benchmark's load
	// client, which follows its own runs among every run's broadcast)
	// saves their decoding. Responses are always decoded.
	KeepEvent func(frame []byte) bool
}

// Event is one event frame from the gateway.
type Event struct {
	Event   string
	Payload json.RawMessage
	Seq     int64
}

// Client is one authenticated gateway connection. Safe for concurrent use.
type Client struct {
	conn    *websocket.Conn
	keep    func([]byte) bool
	rbuf    bytes.Buffer // the reader's frame buffer, reused
	hello   *wire.HelloOK
	events  chan Event
	dropped atomic.Uint64
	nextID  atomic.Uint64

	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards pending
	pending map[string]chan *wire.Frame

	closeOnce sync.Once
}

// Error is a gateway error response.
type Error = wire.Error

// Dial connects and completes the handshake. A rejected handshake returns a
// *Error (for example code INVALID_REQUEST, "unauthorized: …").
func Dial(ctx context.Context, opts Options) (*Client, error) {
	if opts.URL == "" {
		opts.URL = DefaultURL
	}
	if opts.ClientID == "" {
		opts.ClientID = "cli"
	}
	if opts.Mode == "" {
		opts.Mode = "cli"
	}
	if opts.Version == "" {
		opts.Version = "switchboard"
	}
	if opts.Scopes == nil {
		opts.Scopes = []string{"operator.read", "operator.write", "operator.admin"}
	}
	if opts.MinProtocol == 0 {
		opts.MinProtocol = 3
	}
	if opts.MaxProtocol == 0 {
		opts.MaxProtocol = 4
	}
	if opts.EventBuffer <= 0 {
		opts.EventBuffer = 4096
	}
	conn, _, err := websocket.Dial(ctx, opts.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", opts.URL, err)
	}
	conn.SetReadLimit(wire.DefaultMaxPayload)
	c := &Client{
		conn:    conn,
		events:  make(chan Event, opts.EventBuffer),
		pending: make(map[string]chan *wire.Frame),
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	if err := c.handshake(ctx, opts); err != nil {
		conn.CloseNow()
		return nil, err
	}
	c.keep = opts.KeepEvent // the handshake's frames are not filtered
	c.wg.Go(c.readLoop)
	return c, nil
}

func (c *Client) handshake(ctx context.Context, opts Options) error {
	// The first frame is the connect.challenge event.
	f, err := c.readFrame(ctx)
	if err != nil {
		return fmt.Errorf("client: handshake: %w", err)
	}
	if f == nil || f.Type != wire.FrameEvent || f.Event != "connect.challenge" {
		return fmt.Errorf("client: handshake: expected connect.challenge, got %s %s", f.Type, f.Event)
	}
	params := map[string]any{
		"minProtocol": opts.MinProtocol,
		"maxProtocol": opts.MaxProtocol,
		"client": map[string]any{
			"id": opts.ClientID, "version": opts.Version, "platform": "go", "mode": opts.Mode,
		},
		"role":   "operator",
		"scopes": opts.Scopes,
	}
	caps := append([]string{}, opts.Caps...)
	if opts.SessionScoped {
		caps = append(caps, wire.CapSessionScopedEvents)
	}
	params["caps"] = caps
	auth := map[string]any{}
	if opts.Token != "" {
		auth["token"] = opts.Token
	}
	if opts.Password != "" {
		auth["password"] = opts.Password
	}
	if len(auth) > 0 {
		params["auth"] = auth
	}
	id := "connect-" + uuid.NewString()
	if err := c.write(ctx, &wire.Frame{Type: wire.FrameRequest, ID: id, Method: "connect", Params: mustJSON(params)}); err != nil {
		return fmt.Errorf("client: handshake: %w", err)
	}
	for {
		f, err := c.readFrame(ctx)
		if err != nil {
			return fmt.Errorf("client: handshake: %w", err)
		}
		if f == nil || f.Type != wire.FrameResponse || f.ID != id {
			continue
		}
		if !f.OK {
			if f.Error != nil {
				return f.Error
			}
			return errors.New("client: handshake rejected")
		}
		var hello wire.HelloOK
		if err := json.Unmarshal(f.Payload, &hello); err != nil {
			return fmt.Errorf("client: hello-ok: %w", err)
		}
		c.hello = &hello
		return nil
	}
}

// Hello returns the server's hello-ok payload.
func (c *Client) Hello() *wire.HelloOK { return c.hello }

// eventHead is how the gateway begins every event frame.
var eventHead = []byte(`{"type":"event",`)

// readFrame reads the next frame; it returns nil and no error for an event
// that KeepEvent refused. Only the reader calls it (the handshake before
// the reader starts).
func (c *Client) readFrame(ctx context.Context) (*wire.Frame, error) {
	typ, r, err := c.conn.Reader(ctx)
	if err != nil {
		return nil, err
	}
	c.rbuf.Reset()
	if _, err := c.rbuf.ReadFrom(r); err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errors.New("binary frame")
	}
	data := c.rbuf.Bytes()
	if c.keep != nil && bytes.HasPrefix(data, eventHead) && !c.keep(data) {
		return nil, nil
	}
	f, err := wire.Decode(data) // copies what it keeps of data
	if err == nil && c.keep != nil && f.Type == wire.FrameEvent && !c.keep(data) {
		return nil, nil // an event in another encoding, refused after all
	}
	return f, err
}

func (c *Client) write(ctx context.Context, f *wire.Frame) error {
	b, err := f.AppendJSON(nil)
	if err != nil {
		return err
	}
	return c.conn.Write(ctx, websocket.MessageText, b)
}

func (c *Client) readLoop() {
	defer close(c.events)
	// Frames are read without a context: the library registers (and
	// removes) a cancel callback on one per frame, which costs more than
	// decoding a small frame. The connection's end closes the socket
	// instead, which ends the read the same way.
	stop := context.AfterFunc(c.ctx, func() { c.conn.CloseNow() })
	defer stop()
	for {
		f, err := c.readFrame(context.Background())
		if err != nil {
			c.cancel(fmt.Errorf("client: connection closed: %w", err))
			c.failPending()
			return
		}
		if f == nil {
			continue // refused by KeepEvent
		}
		switch f.Type {
		case wire.FrameResponse:
			c.mu.Lock()
			ch, ok := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if ok {
				ch <- f
			}
		case wire.FrameEvent:
			ev := Event{Event: f.Event, Payload: f.Payload}
			if f.Seq != nil {
				ev.Seq = *f.Seq
			}
			// Never let unread events stall responses: when the buffer is
			// full the event is dropped and counted (the gateway's per-run
			// seq lets a reader notice the gap and catch up with
			// agent.wait / chat.history).
			select {
			case c.events <- ev:
			default:
				c.dropped.Add(1)
			}
		}
	}
}

func (c *Client) failPending() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// Events returns the stream of event frames. It is closed when the
// connection ends. A caller that does not read it loses events (never
// responses) once EventBuffer of them wait.
func (c *Client) Events() <-chan Event { return c.events }

// Dropped returns how many events were dropped because Events was not read
// fast enough.
func (c *Client) Dropped() uint64 { return c.dropped.Load() }

// Call sends a request and decodes the response payload into result (which
// may be nil). A gateway error response is returned as *Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.CallRaw(ctx, method, params)
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("client: %s: decode result: %w", method, err)
	}
	return nil
}

// CallRaw is Call returning the raw payload.
func (c *Client) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := strconv.FormatUint(c.nextID.Add(1), 10) + ":" + uuid.NewString()
	ch := make(chan *wire.Frame, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	var p json.RawMessage
	if params != nil {
		if raw, ok := params.(json.RawMessage); ok {
			p = raw
		} else {
			p = mustJSON(params)
		}
	}
	if err := c.write(ctx, &wire.Frame{Type: wire.FrameRequest, ID: id, Method: method, Params: p}); err != nil {
		c.drop(id)
		return nil, fmt.Errorf("client: %s: %w", method, err)
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return nil, context.Cause(c.ctx)
		}
		if !f.OK {
			if f.Error != nil {
				return nil, f.Error
			}
			return nil, fmt.Errorf("client: %s failed", method)
		}
		return f.Payload, nil
	case <-ctx.Done():
		c.drop(id)
		// Tell the server to stop working on it.
		wctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c.write(wctx, &wire.Frame{Type: wire.FrameCancel, ID: id})
		cancel()
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, context.Cause(c.ctx)
	}
}

func (c *Client) drop(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Close closes the connection and waits for the reader. A second call
// returns net.ErrClosed.
func (c *Client) Close() error {
	first := false
	c.closeOnce.Do(func() { first = true })
	if !first {
		return net.ErrClosed
	}
	err := c.conn.Close(websocket.StatusNormalClosure, "")
	c.cancel(net.ErrClosed)
	c.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("client: encode params: %v", err))
	}
	return b
}
