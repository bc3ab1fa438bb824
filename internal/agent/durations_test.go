package agent

import (
	"fmt"
	"testing"
	"time"
)

func TestRunDurations(t *testing.T) {
	var rd runDurations
	if got := rd.typical("a"); got != 0 {
		t.Fatalf("nothing observed: %v", got)
	}
	rd.observe("a", 100*time.Millisecond)
	rd.observe("a", 500*time.Millisecond) // 100 + (500-100)/4
	if got := rd.typical("a"); got != 200*time.Millisecond {
		t.Errorf("a = %v, want 200ms", got)
	}
	if got := rd.typical("never-ran"); got == 0 {
		t.Error("an unknown session gets no global figure")
	}
	r := &Runner{}
	r.durations.observe("s", time.Second)
	if got := r.ExpectedWait("s", 3); got != 3*time.Second {
		t.Errorf("ExpectedWait = %v", got)
	}
	if got := r.ExpectedWait("s", 0); got != 0 {
		t.Errorf("ExpectedWait at position 0 = %v", got)
	}
	// Bounded: a flood of sessions does not grow the table without end.
	for i := range 3 * maxDurationSessions {
		rd.observe(fmt.Sprint("k", i), time.Millisecond)
	}
	if n := len(rd.per); n > maxDurationSessions {
		t.Errorf("%d sessions remembered, bound %d", n, maxDurationSessions)
	}
}
