package outbound

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"time"

	"github.com/switchboardhq/switchboard/internal/a2a/wire"
)

// errNoStreaming: the peer does not serve SendStreamingMessage.
var errNoStreaming = errors.New("a2a peer does not stream")

// stream sends params with SendStreamingMessage and reads the peer's
// events until the task is final or wait ends; the task as last seen is
// returned (still working when the wait ended first, in which case the
// stream is closed: the peer's run goes on). A stream the peer ends early
// is followed with GetTask for the rest of the wait. errNoStreaming means
// the peer refused the method before creating a task.
func (c *Client) stream(ctx context.Context, p Peer, v string, params wire.SendParams, wait time.Duration) (*wire.Task, error) {
	const method = "SendStreamingMessage"
	deadline := time.Now().Add(wait)
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	resp, err := c.post(sctx, c.streams, p, v, wire.MethodSendStreamingMessage, wire.EncodeSendParams(v, params))
	if err != nil {
		if ctx.Err() == nil && sctx.Err() != nil {
			return nil, transportError{fmt.Errorf("a2a peer %q: %s: no answer within %v", p.Name, method, wait)}
		}
		return nil, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A plain JSON-RPC answer: an error, or a peer that does not
		// stream answering as to SendMessage.
		b, err := io.ReadAll(io.LimitReader(resp.Body, wire.MaxResponseBytes+1))
		if err != nil {
			return nil, transportError{fmt.Errorf("a2a peer %q: %s: %w", p.Name, method, err)}
		}
		var r rpcResponse
		if len(b) > wire.MaxResponseBytes || json.Unmarshal(b, &r) != nil {
			return nil, fmt.Errorf("a2a peer %q: %s: bad JSON-RPC response", p.Name, method)
		}
		if r.Error != nil {
			return nil, streamError(p, r.Error)
		}
		if len(r.Result) == 0 || string(r.Result) == "null" {
			// Neither a result nor an error: a server that cannot put a
			// stream on the wire (an A2A JS SDK handler behind a plain
			// JSON writer answers "{}"), and has not run the message.
			return nil, fmt.Errorf("a2a peer %q: %s: empty response: %w", p.Name, method, errNoStreaming)
		}
		// The message was taken: follow its task, never send it again.
		res, err := wire.DecodeStreamEvent(v, r.Result)
		if err != nil || res.Task == nil && res.Message == nil {
			return nil, fmt.Errorf("a2a peer %q: %s: bad result", p.Name, method)
		}
		if res.Task == nil {
			return apply(nil, res), nil
		}
		return c.Wait(ctx, p.Name, res.Task, time.Until(deadline))
	}

	var t *wire.Task
	err = readEvents(resp.Body, func(data []byte) error {
		var r rpcResponse
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("a2a peer %q: %s: bad event: %w", p.Name, method, err)
		}
		if r.Error != nil {
			if t != nil {
				return fmt.Errorf("a2a peer %q: %s: %d %s", p.Name, method, r.Error.Code, r.Error.Message)
			}
			return streamError(p, r.Error)
		}
		if len(r.Result) > 0 && string(r.Result) != "null" {
			ev, err := wire.DecodeStreamEvent(v, r.Result)
			if err != nil {
				return fmt.Errorf("a2a peer %q: %s: bad event: %w", p.Name, method, err)
			}
			t = apply(t, ev)
		}
		if t != nil && wire.Terminal(t.Status.State) {
			return io.EOF
		}
		return nil
	})
	switch {
	case t != nil && wire.Terminal(t.Status.State):
		return t, nil
	case ctx.Err() != nil:
		return t, ctx.Err()
	case t == nil && sctx.Err() != nil:
		// The message may have been taken, but without its task id it
		// cannot be followed.
		return nil, transportError{fmt.Errorf("a2a peer %q: %s: no task within %v", p.Name, method, wait)}
	case t == nil && err == nil:
		return nil, fmt.Errorf("a2a peer %q: %s: the stream ended without a task", p.Name, method)
	case t == nil:
		return nil, err
	case sctx.Err() != nil:
		return t, nil // the wait ended; the task goes on
	case err != nil && !Transient(err):
		return t, err
	}
	// The peer closed the stream (or it broke) before the task ended:
	// poll for the rest of the wait.
	return c.Wait(ctx, p.Name, t, time.Until(deadline))
}

// streamError is the error of a peer that answered SendStreamingMessage
// with JSON-RPC error e: errNoStreaming when the method is unknown or
// unsupported there.
func streamError(p Peer, e *wire.Error) error {
	if e.Code == wire.CodeMethodNotFound || e.Code == wire.CodeUnsupportedOp {
		return fmt.Errorf("a2a peer %q: SendStreamingMessage: %d %s: %w", p.Name, e.Code, e.Message, errNoStreaming)
	}
	return fmt.Errorf("a2a peer %q: SendStreamingMessage: %d %s", p.Name, e.Code, e.Message)
}

// readEvents calls fn with the data of each server-sent event in r (its
// data lines joined with "\n"), until r ends or fn returns an error; io.EOF
// from fn stops without an error. One event is at most 1 MiB.
func readEvents(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), wire.MaxResponseBytes)
	var data []byte
	dispatch := func() error {
		if len(data) == 0 {
			return nil
		}
		err := fn(data)
		data = data[:0]
		return err
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := dispatch(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue // comments, event names, ids
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if len(data) > 0 {
			data = append(data, '\n')
		}
		data = append(data, value...)
	}
	if err := sc.Err(); err != nil {
		return transportError{err}
	}
	if err := dispatch(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// apply folds one stream event into the task as known so far.
func apply(t *wire.Task, ev *wire.StreamResponse) *wire.Task {
	switch {
	case ev.Task != nil:
		cur := *ev.Task
		return &cur
	case ev.Message != nil: // an answer without a task
		return &wire.Task{ContextID: ev.Message.ContextID, Status: wire.TaskStatus{State: wire.StateCompleted},
			Artifacts: []wire.Artifact{{ArtifactID: "reply", Parts: ev.Message.Parts}}}
	case ev.StatusUpdate != nil:
		if t == nil {
			t = &wire.Task{ID: ev.StatusUpdate.TaskID, ContextID: ev.StatusUpdate.ContextID}
		}
		t.Status = ev.StatusUpdate.Status
	case ev.ArtifactUpdate != nil:
		if t == nil {
			t = &wire.Task{ID: ev.ArtifactUpdate.TaskID, ContextID: ev.ArtifactUpdate.ContextID, Status: wire.TaskStatus{State: wire.StateWorking}}
		}
		a := ev.ArtifactUpdate.Artifact
		for i := range t.Artifacts {
			if t.Artifacts[i].ArtifactID == a.ArtifactID {
				if ev.ArtifactUpdate.Append {
					t.Artifacts[i].Parts = append(t.Artifacts[i].Parts, a.Parts...)
				} else {
					t.Artifacts[i] = a
				}
				return t
			}
		}
		t.Artifacts = append(t.Artifacts, a)
	}
	return t
}
