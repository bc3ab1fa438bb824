package shell

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// hostGuarded runs commands on the host (a Confiner that confines
// nothing) under a guard that stops each one as soon as it starts, the
// way the sandbox's quota watcher stops a command that fills its
// workspace; it counts the guard's starts and stops.
type hostGuarded struct {
	refuse        error
	starts, stops atomic.Int32
	pid           atomic.Int32 // given to the last start
}

func (h *hostGuarded) Command(_ context.Context, _, cwd string, argv []string, env []string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = cwd, env
	return cmd, nil
}

func (h *hostGuarded) Guard() (func(pid int, kill func()), func() string, error) {
	if h.refuse != nil {
		return nil, nil, h.refuse
	}
	var killed atomic.Bool
	start := func(pid int, kill func()) {
		h.pid.Store(int32(pid))
		h.starts.Add(1)
		killed.Store(true)
		kill()
	}
	stop := func() string {
		h.stops.Add(1)
		if !killed.Load() {
			return ""
		}
		return "Command stopped: the guard's reason."
	}
	return start, stop, nil
}

// A Confiner that is also a Guarder gets each command guarded: the guard
// starts with the command, its kill reaches the command's whole process
// group, the result says the guard's reason instead of the signal, and
// the guard is stopped once; a guard that refuses keeps the command from
// starting.
func TestExecGuard(t *testing.T) {
	ws := workspace(t)
	g := &hostGuarded{}
	res, err := run(t, New(Config{}).WithSandbox(g), ws, map[string]any{"command": "sleep 30 & sleep 30; touch ran"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "Command stopped: the guard's reason.") || strings.Contains(res.Text, "SIGKILL") {
		t.Errorf("text = %q", res.Text)
	}
	if d := res.Details.(*Details); d.Status != "failed" {
		t.Errorf("details = %+v", d)
	}
	if g.pid.Load() <= 0 {
		t.Errorf("guard started with pid %d, want the command's", g.pid.Load())
	}
	if g.starts.Load() != 1 || g.stops.Load() != 1 {
		t.Errorf("guard started %d and stopped %d times, want once each", g.starts.Load(), g.stops.Load())
	}
	refusing := &hostGuarded{refuse: errors.New("sandbox: the sandbox workspace /s holds 9 bytes, over its quota of 8 bytes")}
	_, err = run(t, New(Config{}).WithSandbox(refusing), ws, map[string]any{"command": "touch refused"})
	if err == nil || !strings.Contains(err.Error(), "over its quota of 8 bytes") {
		t.Errorf("refused guard: err = %v", err)
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("workspace holds %s: a guarded command ran past its guard", ents[0].Name())
	}
}
