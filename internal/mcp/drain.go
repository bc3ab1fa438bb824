package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainLimit bounds how long the end of a host's input waits for the
// answers to the calls it sent before it: long enough for a tool that
// waits on a run, short enough that a server whose host has gone does
// not linger much past a tool's own timeouts.
const drainLimit = 2 * time.Minute

// drainTransport hands the SDK the end of the host's input (io.EOF) only
// once every call read before it has been answered, or after drainLimit.
// The SDK (go-sdk v1.8.0, its issue #1061) otherwise cancels the calls in
// flight at the end of the input and refuses to write their answers, so a
// host that writes its requests and closes its side at once (a script
// piping JSON-RPC lines into `switchboard mcp`) got no answer at all.
// Closing stdin says "no more requests", not "stop answering".
type drainTransport struct {
	sdk.Transport
	limit   time.Duration // 0: drainLimit
	waiting func()        // tests: called when the end waits for answers
}

func (t drainTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	limit := t.limit
	if limit <= 0 {
		limit = drainLimit
	}
	return &drainConn{Connection: c, limit: limit, waiting: t.waiting, answered: make(chan struct{}, 1), open: map[jsonrpc.ID]bool{}}, nil
}

// drainConn counts the calls read and not yet answered (nor cancelled
// by the host).
type drainConn struct {
	sdk.Connection
	limit    time.Duration
	waiting  func()
	answered chan struct{} // capacity 1: a call was answered

	mu   sync.Mutex
	open map[jsonrpc.ID]bool // calls read and not answered
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok {
			switch {
			case req.IsCall():
				c.mu.Lock()
				c.open[req.ID] = true
				c.mu.Unlock()
			case req.Method == "notifications/cancelled":
				c.cancelled(req.Params)
			}
		}
		return msg, nil
	}
	if errors.Is(err, io.EOF) {
		c.drain(ctx)
	}
	return nil, err
}

// drain waits until no call is open, the limit passes or ctx ends.
func (c *drainConn) drain(ctx context.Context) {
	limit := time.NewTimer(c.limit)
	defer limit.Stop()
	for {
		c.mu.Lock()
		n := len(c.open)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		if c.waiting != nil {
			c.waiting()
			c.waiting = nil
		}
		select {
		case <-c.answered:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.close(resp.ID)
	}
	return err
}

// cancelled closes the call a notifications/cancelled names: the host
// expects no answer to it, and the server may send none.
func (c *drainConn) cancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		c.close(id)
	}
}

// close marks call id answered.
func (c *drainConn) close(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.open, id)
	c.mu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
}
