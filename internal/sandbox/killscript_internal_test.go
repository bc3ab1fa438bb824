//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The kill script, run by the host's sh, kills a marked process tree that
// left its session (setsid, double fork) and spares unmarked processes.
func TestKillScriptOnHost(t *testing.T) {
	marker := ExecMarkerVar + "=" + randomID()
	pidFile := t.TempDir() + "/pids"
	// The command: a child in a new session that forks again, and a
	// plain background sleep; each writes its pid.
	cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'echo $$ >> `+pidFile+`; (sleep 301 & echo $! >> `+pidFile+`) ; sleep 302' & sleep 303 & echo $! >> `+pidFile+`; wait`)
	cmd.Env = append(os.Environ(), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	// Whatever a failed run leaves goes: the command's group and the
	// processes that left it.
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
			_ = syscall.Kill(-p, syscall.SIGKILL)
		}
	})
	bystander := exec.Command("sleep", "304")
	bystander.Env = append(os.Environ(), ExecMarkerVar+"=other")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })
	for deadline := time.Now().Add(5 * time.Second); len(pids) < 3 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
	}
	if len(pids) < 3 {
		t.Fatalf("pids %v", pids)
	}
	out, err := exec.Command("/bin/sh", "-c", killScript(marker)).CombinedOutput()
	if err != nil {
		t.Fatalf("kill script: %v: %s", err, out)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the command survived the kill script")
	}
	time.Sleep(100 * time.Millisecond)
	for _, p := range pids {
		// Reparented orphans may linger as zombies until reaped; a live
		// process has a non-empty environ.
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/environ"); err == nil && len(b) > 0 {
			t.Errorf("process %d survived", p)
		}
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the unmarked process was killed: %v", err)
	}
}
