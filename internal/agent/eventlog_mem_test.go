package agent

import (
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// TestEventLogViewsOfSharedEvents: a run's event is logged once for both
// logs, yet a run watcher sees it without the session number and a
// session watcher with it, both before and after the run's end.
func TestEventLogViewsOfSharedEvents(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newEventLog()
	start, end := ev("r", 1, StreamLifecycle, PhaseStart), withSeq(ev("r", 0, StreamLifecycle, PhaseEnd), 2)
	start.SessionKey, end.SessionKey = "agent:main:s", "agent:main:s"
	l.add(start, t0)
	l.add(end, t0)
	runEvs, _, _ := l.since("r", 0, t0)
	sessEvs, _ := l.sessionSince("agent:main:s", 0, t0)
	if len(runEvs) != 2 || len(sessEvs) != 2 {
		t.Fatalf("run view %d events, session view %d; want 2 and 2", len(runEvs), len(sessEvs))
	}
	for i := range runEvs {
		if runEvs[i].SessionSeq != 0 {
			t.Errorf("run view event %d has SessionSeq %d; want 0", i, runEvs[i].SessionSeq)
		}
		if sessEvs[i].SessionSeq != int64(i+1) || sessEvs[i].Seq != runEvs[i].Seq {
			t.Errorf("session view event %d: seq %d, SessionSeq %d; want seq %d, SessionSeq %d",
				i, sessEvs[i].Seq, sessEvs[i].SessionSeq, runEvs[i].Seq, i+1)
		}
	}
	// A copy handed out is the caller's: changing it changes neither log.
	runEvs[0].Text = "changed"
	sessEvs[1].Text = "changed"
	again, _, _ := l.since("r", 0, t0)
	sessAgain, _ := l.sessionSince("agent:main:s", 0, t0)
	if again[0].Text != "" || sessAgain[1].Text != "" {
		t.Fatal("a watcher's copy changed the log")
	}
}

// TestEventLogKeepsEachEventOnce bounds what the log holds for an ended
// run of six events in its own session (the 1,000-session workload keeps
// thousands of them): each event once, shared by the run's and the
// session's log, in its compact form (logEvent). Two copies in slices
// grown to eight cost 4.6 KB a run; one whole Event each, 2.3 KB.
func TestEventLogKeepsEachEventOnce(t *testing.T) {
	const runs = 2000
	t0 := time.Unix(1000, 0)
	l := newEventLog()
	before := heapInUse()
	for i := range runs {
		run, key := fmt.Sprintf("run-%d", i), fmt.Sprintf("agent:main:s%d", i)
		for seq := int64(1); seq <= 6; seq++ {
			e := ev(run, seq, StreamAssistant, "")
			if seq == 6 {
				e.Stream, e.Phase = StreamLifecycle, PhaseEnd
			}
			e.SessionKey = key
			l.add(e, t0)
		}
	}
	per := float64(heapInUse()-before) / runs
	runtime.KeepAlive(l)
	t.Logf("%.0f bytes per ended run of 6 events", per)
	if limit := 6*float64(unsafe.Sizeof(logEvent{})) + 700; per > limit {
		t.Fatalf("the log holds %.0f bytes per ended run of 6 events; want at most %.0f", per, limit)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
