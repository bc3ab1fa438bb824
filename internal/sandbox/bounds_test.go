package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A loop starting processes without end stops by itself at the process
// limit, also when the gateway is root (issue 30: 600 processes ran
// against a limit of 256, RLIMIT_NPROC not binding for root).
func TestProcessLimitBindsForkLoop(t *testing.T) {
	requireBwrap(t)
	const limit = 24
	spec := Spec{WorkspaceAccess: AccessNone, Limits: Limits{Procs: limit}}
	// Each started sleep is counted; the shell gives up at the first fork
	// that fails. The pid namespace ends the sleeps with the command.
	script := `i=0; while [ $i -lt 200 ]; do sleep 1000 & i=$((i+1)); echo "started $i"; done; echo "all 200 started"`
	cmd, err := spec.Command(context.Background(), "", "", []string{"/bin/sh", "-c", script}, Env())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	text := string(out)
	if strings.Contains(text, "all 200 started") {
		t.Fatalf("the fork loop was not bounded:\n%.400s", text)
	}
	started := 0
	for _, line := range strings.Split(text, "\n") {
		if n, ok := strings.CutPrefix(line, "started "); ok {
			started, _ = strconv.Atoi(n)
		}
	}
	t.Logf("started %d of 200 processes under a limit of %d", started, limit)
	if started == 0 || started >= limit {
		t.Fatalf("started %d processes against a limit of %d:\n%.400s", started, limit, text)
	}
	if dir, _ := procBound(); dir != "" {
		// The command's cgroup goes with the next command's sweep, once
		// its last process (the sleeps the pid namespace kills as the
		// command ends) has been reaped: the kernel refuses to remove a
		// cgroup before that.
		cg := filepath.Join(dir, strconv.Itoa(cmd.Process.Pid))
		deadline := time.Now().Add(10 * time.Second)
		for {
			sweepPidsGroups(dir)
			if _, err := os.Stat(cg); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				procs, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
				t.Fatalf("cgroup %s of the finished command left behind (procs %q)", cg, procs)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A write past the private tmpfs size fails with ENOSPC inside.
func TestTmpfsSizeBound(t *testing.T) {
	requireBwrap(t)
	spec := Spec{WorkspaceAccess: AccessNone, Limits: Limits{TmpBytes: 4 << 20}}
	cmd, err := spec.Command(context.Background(), "", "", []string{"/bin/sh", "-c",
		`head -c 16000000 /dev/zero > /tmp/big; echo "rc=$?"; wc -c < /tmp/big`}, Env())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	text := string(out)
	if !strings.Contains(text, "No space left on device") || strings.Contains(text, "rc=0") {
		t.Fatalf("write past the tmpfs size = %q", text)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(text[strings.LastIndex(strings.TrimSpace(text), "\n")+1:])); n > 4<<20 {
		t.Fatalf("wrote %d bytes into a %d byte tmpfs", n, 4<<20)
	}
}

// A command does not start while the scope's private workspace is over
// its quota (files put there from outside, or left by a command stopped
// just past it); once files are removed it runs again.
func TestWorkspaceQuota(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	spec := Spec{WorkspaceAccess: AccessNone, ScopeDir: dir, Limits: Limits{WorkspaceBytes: 1 << 20}}
	run := func() (string, error) {
		cmd, err := spec.Command(context.Background(), "", "", []string{"/bin/sh", "-c", `echo done`}, Env())
		if err != nil {
			return "", err
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(); err != nil || !strings.Contains(out, "done") {
		t.Fatalf("first command = %q, %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fill"), make([]byte, 1500000), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := run()
	if err == nil || !strings.Contains(err.Error(), "over its quota of 1048576 bytes") {
		t.Fatalf("command over the quota: %v", err)
	}
	if _, _, err := spec.Guard(); err == nil || !strings.Contains(err.Error(), "over its quota of 1048576 bytes") {
		t.Fatalf("guard over the quota: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "fill")); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil || !strings.Contains(out, "done") {
		t.Fatalf("after freeing space = %q, %v", out, err)
	}
}

// Without a writable pids cgroup a root gateway's sandbox cannot be
// bounded and refuses to start, saying why; another user's is bounded by
// RLIMIT_NPROC.
func TestChooseBound(t *testing.T) {
	saved := cgroupRoot
	cgroupRoot = t.TempDir() // no cgroup file system mounted there
	_, cgErr := pidsCgroup()
	cgroupRoot = saved
	if cgErr == nil {
		t.Fatal("pidsCgroup found a cgroup in an empty directory")
	}
	if dir, err := chooseBound("", cgErr, 0); dir != "" || err == nil ||
		!strings.Contains(err.Error(), "sandbox unavailable: the gateway runs as root, whose processes RLIMIT_NPROC does not bound, and no pids cgroup is writable") {
		t.Errorf("root without a cgroup = %q, %v", dir, err)
	}
	if dir, err := chooseBound("", cgErr, 1000); dir != "" || err != nil {
		t.Errorf("unprivileged without a cgroup = %q, %v", dir, err)
	}
	if dir, err := chooseBound("/sys/fs/cgroup/pids/x", nil, 0); dir != "/sys/fs/cgroup/pids/x" || err != nil {
		t.Errorf("root with a cgroup = %q, %v", dir, err)
	}
}

// runGuarded runs script in spec's sandbox under its quota guard, as the
// exec tool does, and returns its output and the guard's reason.
func runGuarded(t *testing.T, spec Spec, script string) (string, string) {
	t.Helper()
	cmd, err := spec.Command(context.Background(), "", "", []string{"/bin/sh", "-c", script}, Env())
	if err != nil {
		t.Fatal(err)
	}
	start, stop, err := spec.Guard()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		stop()
		t.Fatal(err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	start(cmd.Process.Pid, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	_ = cmd.Wait()
	return out.String(), stop()
}

// The quota guard follows files in directories made, moved and removed
// during the command: removed files free their space (no false stop),
// and files written into new nested directories count.
func TestQuotaGuardFollowsTheTree(t *testing.T) {
	requireBwrap(t)
	const quota = 4 << 20
	dir := t.TempDir()
	spec := Spec{WorkspaceAccess: AccessNone, ScopeDir: dir, Limits: Limits{WorkspaceBytes: quota}}
	// 3 MiB at a time, 12 MiB in all, never more than 3 MiB at once.
	churn := `set -e
for r in 1 2 3 4; do
  mkdir -p d$r/x/y; head -c 3000000 /dev/zero > d$r/x/y/f
  mv d$r moved$r; rm -r moved$r
done
mkdir keep; head -c 1000 /dev/zero > keep/f; echo churned`
	out, why := runGuarded(t, spec, churn)
	if why != "" || !strings.Contains(out, "churned") {
		t.Fatalf("churn under the quota: output %q, stopped %q", out, why)
	}
	fill := `mkdir -p a/b/c; i=0; while [ $i -lt 400 ]; do head -c 65536 /dev/zero > a/b/c/f$i || exit 3; i=$((i+1)); done; echo "all written"`
	out, why = runGuarded(t, spec, fill)
	if strings.Contains(out, "all written") || !strings.Contains(why, "went over its quota of 4194304 bytes") {
		t.Fatalf("fill of nested directories: output %q, stopped %q", out, why)
	}
	used, err := workspaceUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped at %d bytes against a quota of %d", used, quota)
	if used <= quota || used > quota+(64<<20) { // the slack, docs/sandbox.md
		t.Fatalf("workspace holds %d bytes after the stop (quota %d)", used, quota)
	}
}

// No single file passes what is left of the quota when the command
// starts: its RLIMIT_FSIZE is lowered to that.
func TestQuotaBoundsOneFile(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old"), make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{WorkspaceAccess: AccessNone, ScopeDir: dir, Limits: Limits{WorkspaceBytes: 4 << 20}}
	out, _ := runGuarded(t, spec, `head -c 8000000 /dev/zero > big; wc -c < big`)
	if !strings.Contains(out, strconv.Itoa(1<<20)) {
		t.Fatalf("one file past the rest of the quota: %q", out)
	}
}

// explain states the workspace quota and that it holds during a command,
// for both backends; an rw workspace has none.
func TestExplainWorkspaceQuota(t *testing.T) {
	for _, backend := range []string{"bubblewrap", "docker"} {
		spec := Spec{Backend: backend, WorkspaceAccess: AccessNone, ScopeDir: "/s/agent-main", Limits: Limits{WorkspaceBytes: 5 << 20}}
		out := spec.Explain("/ws")
		if !strings.Contains(out, "sandbox workspace quota 5242880 bytes") || !strings.Contains(out, "a watcher kills the command once the workspace passes it") {
			t.Errorf("%s explain lacks the quota:\n%s", backend, out)
		}
		spec.WorkspaceAccess = AccessRW
		if out := spec.Explain("/ws"); strings.Contains(out, "quota") {
			t.Errorf("%s explain of an rw workspace names a quota:\n%s", backend, out)
		}
	}
}
