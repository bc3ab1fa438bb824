package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// its quota; once files are removed it runs again.
func TestWorkspaceQuota(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	spec := Spec{WorkspaceAccess: AccessNone, ScopeDir: dir, Limits: Limits{WorkspaceBytes: 1 << 20}}
	run := func() (string, error) {
		cmd, err := spec.Command(context.Background(), "", "", []string{"/bin/sh", "-c", `head -c 1500000 /dev/zero > fill; echo done`}, Env())
		if err != nil {
			return "", err
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(); err != nil || !strings.Contains(out, "done") {
		t.Fatalf("first command = %q, %v", out, err)
	}
	_, err := run()
	if err == nil || !strings.Contains(err.Error(), "over its quota of 1048576 bytes") {
		t.Fatalf("command over the quota: %v", err)
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
