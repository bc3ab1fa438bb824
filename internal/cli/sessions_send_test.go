package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// fakeCaller answers each method with a fixed result.
type fakeCaller map[string]string

func (f fakeCaller) CallRaw(_ context.Context, method string, _ any) (json.RawMessage, error) {
	res, ok := f[method]
	if !ok {
		return nil, &client.Error{Code: wire.CodeInvalidRequest, Message: "unknown method: " + method}
	}
	return json.RawMessage(res), nil
}

func chatEvent(t *testing.T, seq int64, ce wire.ChatEvent) client.Event {
	t.Helper()
	b, err := json.Marshal(ce)
	if err != nil {
		t.Fatal(err)
	}
	return client.Event{Event: wire.EventChat, Payload: b, Seq: seq}
}

// TestRunWaiterRecoversMissedEvents checks the fallback: after a gap in
// the event seqs the waiter asks agent.wait how the run ended and prints
// the rest of the reply from chat.history.
func TestRunWaiterRecoversMissedEvents(t *testing.T) {
	const history = `{"sessionKey":"agent:main:main","messages":[
		{"role":"user","content":"hello world"},
		{"role":"assistant","content":[{"type":"text","text":"echo: hello world"}],"__openclaw":{"runId":"r1"}},
		{"role":"assistant","content":[{"type":"text","text":"another run"}],"__openclaw":{"runId":"r2"}}]}`
	for _, tt := range []struct {
		name      string
		wait      string
		wantOut   string
		wantState string
		wantErr   string
	}{
		{name: "ok", wait: `{"runId":"r1","status":"ok","endedAt":5}`, wantOut: "echo: hello world\n", wantState: wire.ChatStateFinal},
		{name: "aborted", wait: `{"runId":"r1","status":"error","error":"aborted","endedAt":5}`, wantOut: "echo: hello world\n", wantState: wire.ChatStateAborted},
		{name: "failed", wait: `{"runId":"r1","status":"timeout","error":"run timed out","endedAt":5}`, wantOut: "echo: hello world\n", wantState: wire.ChatStateError},
		{name: "wait timed out", wait: `{"runId":"r1","status":"timeout"}`, wantOut: "echo: \n", wantErr: "did not finish within"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			events := make(chan client.Event, 8)
			events <- client.Event{Event: wire.EventTick, Payload: json.RawMessage(`{"ts":1}`), Seq: 7}
			events <- chatEvent(t, 8, wire.ChatEvent{RunID: "r2", State: wire.ChatStateDelta, DeltaText: "not ours"})
			events <- chatEvent(t, 9, wire.ChatEvent{RunID: "r1", State: wire.ChatStateDelta, DeltaText: "echo: "})
			events <- chatEvent(t, 11, wire.ChatEvent{RunID: "r1", State: wire.ChatStateFinal}) // 10 was lost

			var w chunkWriter
			rw := &runWaiter{g: &globalFlags{timeout: time.Second}, key: "main", runID: "r1", out: &w}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err := rw.stream(ctx, events)
			if _, ok := errors.AsType[*errMissed](err); !ok {
				t.Fatalf("stream err = %v, want errMissed", err)
			}
			out, err := rw.recover(ctx, fakeCaller{
				wire.MethodAgentWait:   tt.wait,
				wire.MethodChatHistory: history,
			})
			if tt.wantErr != "" {
				rw.endLine()
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("recover err = %v, want %q", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				rw.finish(out.text)
				if out.state != tt.wantState {
					t.Errorf("state = %q, want %q", out.state, tt.wantState)
				}
			}
			if diff := cmp.Diff(tt.wantOut, strings.Join(w.chunks, "")); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunWaiterConnectionLost(t *testing.T) {
	events := make(chan client.Event)
	close(events)
	rw := &runWaiter{runID: "r1", out: &chunkWriter{}}
	_, err := rw.stream(t.Context(), events)
	if m, ok := errors.AsType[*errMissed](err); !ok || !m.connLost {
		t.Errorf("stream err = %v, want errMissed{connLost}", err)
	}
}
