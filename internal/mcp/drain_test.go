package mcp

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptConn reads its messages, then io.EOF; it writes nowhere.
type scriptConn struct {
	msgs []jsonrpc.Message
}

func (c *scriptConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.msgs) == 0 {
		return nil, io.EOF
	}
	m := c.msgs[0]
	c.msgs = c.msgs[1:]
	return m, nil
}
func (c *scriptConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *scriptConn) Close() error                                 { return nil }
func (c *scriptConn) SessionID() string                            { return "" }

type scriptTransport struct{ c *scriptConn }

func (t scriptTransport) Connect(context.Context) (sdk.Connection, error) { return t.c, nil }

func call(t *testing.T, id any, method string) *jsonrpc.Request {
	t.Helper()
	jid, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	return &jsonrpc.Request{ID: jid, Method: method}
}

// readEOF reads c to its end in a goroutine; the channel gets the end's
// error once Read returns it.
func readEOF(t *testing.T, c sdk.Connection, n int) <-chan error {
	t.Helper()
	for range n {
		if _, err := c.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	end := make(chan error, 1)
	go func() {
		_, err := c.Read(t.Context())
		end <- err
	}()
	return end
}

func TestDrainHoldsTheEndUntilEveryCallIsAnswered(t *testing.T) {
	one, two := call(t, float64(1), "tools/list"), call(t, "two", "tools/call")
	note := &jsonrpc.Request{Method: "notifications/initialized"}
	waiting := make(chan struct{})
	c, err := drainTransport{
		Transport: scriptTransport{&scriptConn{msgs: []jsonrpc.Message{one, note, two}}},
		waiting:   func() { close(waiting) },
	}.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Write(t.Context(), &jsonrpc.Response{ID: one.ID}); err != nil {
		t.Fatal(err)
	}
	// The server answers call two once the end of the input waits for
	// it; a notification it sends first is no answer.
	var answering atomic.Bool // set before the answer is written
	answered := make(chan error, 1)
	go func() {
		<-waiting
		err := c.Write(t.Context(), &jsonrpc.Request{Method: "notifications/progress"})
		if err == nil {
			answering.Store(true)
			err = c.Write(t.Context(), &jsonrpc.Response{ID: two.ID})
		}
		answered <- err
	}()
	if _, err := c.Read(t.Context()); err != io.EOF {
		t.Errorf("end = %v, want io.EOF", err)
	}
	if !answering.Load() {
		t.Fatal("the end of the input came before call two was answered")
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
}

func TestDrainEndsAtItsLimitOrTheContext(t *testing.T) {
	t.Run("limit", func(t *testing.T) {
		c, err := drainTransport{Transport: scriptTransport{&scriptConn{msgs: []jsonrpc.Message{call(t, "x", "tools/call")}}}, limit: time.Nanosecond}.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := <-readEOF(t, c, 1); err != io.EOF {
			t.Errorf("end = %v, want io.EOF", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		// A call the host cancelled gets no answer: the end does not
		// wait for one (the limit is an hour here).
		cancel := &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":7,"reason":"user"}`)}
		c, err := drainTransport{Transport: scriptTransport{&scriptConn{msgs: []jsonrpc.Message{call(t, float64(7), "tools/call"), cancel}}}, limit: time.Hour}.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := <-readEOF(t, c, 2); err != io.EOF {
			t.Errorf("end = %v, want io.EOF", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		c, err := drainTransport{Transport: scriptTransport{&scriptConn{msgs: []jsonrpc.Message{call(t, "x", "tools/call")}}}}.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := c.Read(ctx); err != io.EOF {
			t.Errorf("end = %v, want io.EOF", err)
		}
	})
}
