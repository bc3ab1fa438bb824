package timerslack

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childEnv carries the slack TestReexecSetsEveryThread's child asks for.
const childEnv = "TIMERSLACK_TEST_WANT"

// TestReexecSetsEveryThread: a process that calls Reexec with a slack
// larger than its own is executed again in place, and in the new image
// every thread, the runtime's monitor among them, runs with that slack;
// the mark that stops a second exec is gone from its environment.
func TestReexecSetsEveryThread(t *testing.T) {
	if v := os.Getenv(childEnv); v != "" {
		reexecChild(v)
		return
	}
	own, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	want := own + 3*time.Millisecond // more than this process's, whatever it inherited
	cmd := exec.Command(os.Args[0], "-test.run=^TestReexecSetsEveryThread$")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.FormatInt(int64(want), 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var pids []string
	threads := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "pid":
			pids = append(pids, f[1])
		case len(f) == 4 && f[0] == "thread":
			threads++
			if f[3] != strconv.FormatInt(int64(want), 10) {
				t.Errorf("thread %s of the new image has slack %s ns, want %d", f[1], f[3], want)
			}
		case len(f) == 2 && f[0] == "mark":
			t.Errorf("the new image's environment still holds %s=%s", envDone, f[1])
		}
	}
	if len(pids) != 2 || pids[0] != pids[1] {
		t.Fatalf("images' pids %q, want two, the same (an exec in place)\n%s", pids, out)
	}
	if threads < 2 { // the main thread and the monitor at least
		t.Fatalf("the new image listed %d threads\n%s", threads, out)
	}
}

// reexecChild runs in the test's child: its first image calls Reexec,
// which does not return; the second reports what it runs with.
func reexecChild(v string) {
	ns, _ := strconv.ParseInt(v, 10, 64)
	fmt.Println("pid", os.Getpid())
	if os.Getenv(envDone) == "" {
		if err := Reexec(time.Duration(ns)); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("error Reexec returned without executing")
		os.Exit(1)
	}
	if err := Reexec(time.Duration(ns)); err != nil { // the second image: no exec
		fmt.Println("error", err)
		os.Exit(1)
	}
	if m := os.Getenv(envDone); m != "" {
		fmt.Println("mark", m)
	}
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for _, tid := range tids {
		// A thread's own file is /proc/<tid>/timerslack_ns (the task
		// directory has none).
		b, err := os.ReadFile("/proc/" + tid.Name() + "/timerslack_ns")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("thread", tid.Name(), "slack", strings.TrimSpace(string(b)))
	}
}
