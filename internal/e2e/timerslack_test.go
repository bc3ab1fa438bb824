//go:build linux

package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestServeRunsWithTheTimerSlack: serve executes itself again with a 500 µs
// timer slack (package timerslack), so every thread of the running
// gateway, the Go runtime's monitor among them, has it; the commands it
// runs inherit it and not the mark of the exec. SWITCHBOARD_TIMER_SLACK=0
// keeps the slack serve was started with, and a bad value stops serve
// with the variable's name.
func TestServeRunsWithTheTimerSlack(t *testing.T) {
	own, err := os.ReadFile("/proc/self/timerslack_ns")
	if err != nil {
		t.Fatal(err)
	}
	inherited := strings.TrimSpace(string(own))
	t.Run("default", func(t *testing.T) {
		// A launcher's larger slack (systemd's TimerSlackNSec) is kept.
		want := "500000"
		if n, _ := strconv.Atoi(inherited); n > 500000 {
			want = inherited
		}
		g := start(t, "", nil)
		for tid, ns := range threadSlacks(t, g.cmd.Process.Pid) {
			if ns != want {
				t.Errorf("thread %s: slack %s ns, want %s", tid, ns, want)
			}
		}
		c := g.dial(t)
		call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": "cat /proc/self/timerslack_ns; env"}), "idempotencyKey": "slack1"})
		waitRun(t, c, "slack1")
		out := lastToolText(t, c, "agent:main:main", "exec")
		if first, _, _ := strings.Cut(out, "\n"); first != want {
			t.Errorf("the exec command's slack = %q, want %s", first, want)
		}
		if strings.Contains(out, "SWITCHBOARD_TIMER_SLACK") {
			t.Errorf("the exec command's environment holds the exec's mark:\n%s", out)
		}
	})
	t.Run("before the initialisers", func(t *testing.T) {
		// The exec comes from package early's initialiser: the first image
		// ran the runtime's initialisers and few packages', none of the
		// costly ones (SQLite's here), which the second image runs once.
		g := start(t, "", nil, "GODEBUG=inittrace=1")
		trace := g.stdio.String()
		runtimes := strings.Count(trace, "init runtime @")
		sqlite := strings.Count(trace, "init modernc.org/sqlite/lib @")
		wantRuntimes := 2
		if n, _ := strconv.Atoi(inherited); n >= 500000 {
			wantRuntimes = 1 // no exec: the launcher's slack is kept
		}
		if runtimes != wantRuntimes || sqlite != 1 {
			t.Errorf("the runtime initialised %d times (want %d), SQLite's package %d (want 1):\n%s", runtimes, wantRuntimes, sqlite, trace)
		}
	})
	t.Run("off", func(t *testing.T) {
		g := start(t, "", nil, "SWITCHBOARD_TIMER_SLACK=0")
		for tid, ns := range threadSlacks(t, g.cmd.Process.Pid) {
			if ns != inherited {
				t.Errorf("thread %s: slack %s ns, want the inherited %s", tid, ns, inherited)
			}
		}
	})
	t.Run("bad", func(t *testing.T) {
		dir := t.TempDir()
		out, err := serveOutput(t, dir, "SWITCHBOARD_TIMER_SLACK=fast")
		if err == nil || !strings.Contains(out, `SWITCHBOARD_TIMER_SLACK="fast": want a duration`) {
			t.Fatalf("serve with a bad slack: %v\n%s", err, out)
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("serve wrote %s in the state dir before refusing the variable", ents[0].Name())
		}
	})
}

// threadSlacks returns the timer slack of each thread of the process pid,
// in nanoseconds, by thread id.
func threadSlacks(t *testing.T, pid int) map[string]string {
	t.Helper()
	tids, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(tids))
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/" + tid.Name() + "/timerslack_ns")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread ended since the listing
			}
			t.Fatal(err)
		}
		out[tid.Name()] = strings.TrimSpace(string(b))
	}
	if len(out) < 2 {
		t.Fatalf("process %d: %d threads listed", pid, len(out))
	}
	return out
}
