package gateway

import (
	"encoding/json"
	"strings"
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

// watchMidRun starts run id in the main session (it replies "partial",
// then stalls) and has a second client call method (watch) with params,
// reading its events, named as the method, up to the first assistant
// event.
func watchMidRun[T any](t *testing.T, id, method string, params map[string]any, stream func(T) string) (e *env, c, watcher *client, seen []T) {
	t.Helper()
	e = newEnv(t, envOptions{})
	c = e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply partial\n/stall", "idempotencyKey": id}, nil)
	watcher = e.operator()
	watcher.start(method, params)
	for {
		ev := decodeAs[T](t, watcher.expectEvent(method))
		if seen = append(seen, ev); stream(ev) == "assistant" {
			return e, c, watcher, seen
		}
	}
}

// TestRunsWatchResumesAfterReconnect: a client follows a run, loses its
// connection mid-run, and follows it again on a new connection from the
// last seq it saw: it gets every event once, in order, and the final once;
// a client that saw the final gets no event again.
func TestRunsWatchResumesAfterReconnect(t *testing.T) {
	e, c, first, seen := watchMidRun(t, "w1", wire.MethodRunsWatch, map[string]any{"runId": "w1"},
		func(ev agentEv) string { return ev.Stream })
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

// TestSessionsWatchResumesAfterReconnect: a client follows a session,
// loses its connection during its first run, and follows it again from
// the last sessionSeq it saw until the next run's end: it gets the rest
// of the first run and all of the second, every event once and in order.
func TestSessionsWatchResumesAfterReconnect(t *testing.T) {
	e, c, first, seen := watchMidRun(t, "s1", wire.MethodSessionsWatch, map[string]any{"key": "main"},
		func(ev wire.SessionWatchEvent) string { return ev.Stream })
	first.close() // the connection drops during the first run
	c.ok(wire.MethodChatAbort, map[string]any{"sessionKey": "main", "runId": "s1"}, nil)
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "s1", "timeoutMs": 30000}, nil)
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply second", "idempotencyKey": "s2"}, nil)

	second := e.operator()
	var res wire.SessionsWatchResult
	second.ok(wire.MethodSessionsWatch, map[string]any{"key": "main", "afterSeq": seen[len(seen)-1].SessionSeq, "untilRunId": "s2"}, &res)
	all := seen
	for _, f := range second.received() {
		if f.Type == wire.FrameEvent && f.Event == wire.EventSessionsWatch {
			all = append(all, decodeAs[wire.SessionWatchEvent](t, f))
		}
	}
	next := map[string]int64{}
	ends := map[string]int{}
	for i, ev := range all {
		b, _ := json.Marshal(all)
		if ev.SessionKey != "agent:main:main" || ev.Seq != next[ev.RunID]+1 || (i > 0 && ev.SessionSeq <= all[i-1].SessionSeq) {
			t.Fatalf("event %d of %s: want each run's seqs 1..n once, sessionSeqs rising", i, b)
		}
		next[ev.RunID] = ev.Seq
		if ev.Stream == "lifecycle" && strings.Contains(string(ev.Data), `"phase":"end"`) {
			ends[ev.RunID]++
		}
	}
	if ends["s1"] != 1 || ends["s2"] != 1 || len(next) != 2 {
		t.Fatalf("ends %v of runs %v, want one end of s1 and one of s2", ends, next)
	}
	if res.Key != "agent:main:main" || res.Seq != all[len(all)-1].SessionSeq || res.TimedOut {
		t.Fatalf("answer %+v, want the last sessionSeq %d", res, all[len(all)-1].SessionSeq)
	}
}
