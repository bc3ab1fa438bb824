package gateway

import (
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// watchedEvents are the runs.watch events c received, in order.
func watchedEvents(t *testing.T, c *client) []agentEv {
	t.Helper()
	var out []agentEv
	for _, f := range c.received() {
		if f.Type == wire.FrameEvent && f.Event == wire.EventRunsWatch {
			out = append(out, decodeAs[agentEv](t, f))
		}
	}
	return out
}

// TestRunsWatchResumesAfterReconnect: a client follows a run, loses its
// connection mid-run, and follows it again on a new connection from the
// last seq it saw: it gets every event once, in order, and the final once;
// a client that saw the final gets no event again.
func TestRunsWatchResumesAfterReconnect(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply partial\n/stall", "idempotencyKey": "w1"}, nil)

	first := e.operator()
	first.start(wire.MethodRunsWatch, map[string]any{"runId": "w1"})
	var seen []agentEv
	for {
		ev := decodeAs[agentEv](t, first.expectEvent(wire.EventRunsWatch))
		seen = append(seen, ev)
		if ev.Stream == "assistant" {
			break
		}
	}
	first.close() // the connection drops before the run ends
	c.ok(wire.MethodChatAbort, map[string]any{"sessionKey": "main", "runId": "w1"}, nil)

	second := e.operator()
	var res wire.RunsWatchResult
	second.ok(wire.MethodRunsWatch, map[string]any{"runId": "w1", "afterSeq": seen[len(seen)-1].Seq}, &res)
	all := append(seen, watchedEvents(t, second)...)
	for i, ev := range all {
		if ev.Seq != int64(i+1) || ev.RunID != "w1" || ev.SessionKey != "agent:main:main" {
			b, _ := json.Marshal(all)
			t.Fatalf("event %d of %s: want seqs 1..n, each once", i, b)
		}
	}
	if res.RunID != "w1" || res.Status != waitError || res.Error != abortedError || res.Seq != int64(len(all)+1) || res.Text != "partial" {
		t.Fatalf("final = %+v, want the aborted run's final numbered %d with its partial reply", res, len(all)+1)
	}

	// A client that saw the final asks again: no event, the final again.
	third := e.operator()
	var again wire.RunsWatchResult
	third.ok(wire.MethodRunsWatch, map[string]any{"runId": "w1", "afterSeq": res.Seq}, &again)
	if evs := watchedEvents(t, third); len(evs) != 0 || again.Status != waitError || again.Seq != res.Seq {
		t.Fatalf("after the final: %d events, final %+v", len(evs), again)
	}
	if err := third.fail(wire.MethodRunsWatch, map[string]any{"runId": "nope"}); err.Code != wire.CodeInvalidRequest || err.Message != "unknown run: nope" {
		t.Fatalf("unknown run: %+v", err)
	}
}
