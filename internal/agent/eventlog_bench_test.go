package agent

import (
	"fmt"
	"testing"
	"time"
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
