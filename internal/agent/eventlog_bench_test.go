package agent

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// BenchmarkEventLogAdd logs the events of 64 runs on 16 sessions, as the
// runner does for every event it emits or hears relayed (the run logs
// and, with them, the session index WatchSession reads).
func BenchmarkEventLogAdd(b *testing.B) {
	l := newEventLog()
	now := time.Unix(1000, 0)
	runs, keys := make([]string, 64), make([]string, 64)
	for i := range runs {
		runs[i], keys[i] = fmt.Sprintf("run-%d", i), fmt.Sprintf("agent:main:s%d", i%16)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := i % len(runs)
		l.add(Event{RunID: runs[r], SessionKey: keys[r], Seq: int64(i/len(runs) + 1), Stream: StreamAssistant}, now)
	}
}

// BenchmarkEventLogRunBytes logs the events of one-turn runs as the
// runner emits them (start, model, assistant, usage, end with the run
// record and reply), each run in its own session, as the 1,000-session
// workload of bench/gateway does, and reports the live bytes the log
// keeps per ended run.
func BenchmarkEventLogRunBytes(b *testing.B) {
	l := newEventLog()
	now := time.Unix(1000, 0)
	msg := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("ok")}, now)
	b.ReportAllocs()
	before := heapInUse()
	n := 0
	for b.Loop() {
		run := &store.Run{RunID: fmt.Sprintf("run-%d", n), SessionKey: fmt.Sprintf("agent:main:s%d", n), AgentID: "main", Lane: "main"}
		id := Event{RunID: run.RunID, SessionKey: run.SessionKey, SessionID: "t", AgentID: run.AgentID, Lane: run.Lane, Time: now}
		for seq, e := range []Event{
			{Stream: StreamLifecycle, Phase: PhaseStart},
			{Stream: StreamLifecycle, Phase: PhaseModel, ProviderID: "offline", ModelID: "echo"},
			{Stream: StreamAssistant, Text: "ok", Delta: "ok"},
			{Stream: StreamUsage, Usage: &transcript.Usage{Input: 10, Output: 1}},
			{Stream: StreamLifecycle, Phase: PhaseEnd, Run: run, Message: msg},
		} {
			e.RunID, e.SessionKey, e.SessionID, e.AgentID, e.Lane, e.Time = id.RunID, id.SessionKey, id.SessionID, id.AgentID, id.Lane, id.Time
			e.Seq = int64(seq + 1)
			l.add(e, now)
		}
		n++
	}
	b.StopTimer()
	// The run records and usages are the runner's; what the log adds is
	// the rest.
	b.ReportMetric(float64(heapInUse()-before)/float64(n), "B/run")
	runtime.KeepAlive(l)
}
