package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardhq/switchboard/internal/tools"
)

func callAs(t *testing.T, tool tools.Tool, agent, ws string, args map[string]any) (*tools.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: "agent:" + agent + ":main", AgentID: agent, Workspace: ws})
	return tool.Call(ctx, raw)
}

// TestBackgroundExecAndProcess: a command still running at yieldMs goes to
// the background; process polls its new output, writes to its input, reads
// its log, sees its exit code, and kills another one (with everything it
// started); other agents cannot see the session.
func TestBackgroundExecAndProcess(t *testing.T) {
	defer goleak.VerifyNone(t)
	ws := workspace(t)
	jobs := NewJobs(JobsConfig{})
	defer jobs.Close()
	ex, proc := New(Config{Jobs: jobs}), NewProcessTool(jobs)

	// Fast commands still answer in the foreground.
	res, err := callAs(t, ex, "main", ws, map[string]any{"command": "echo quick", "yieldMs": 5000})
	if err != nil || res.Text != "quick\n" {
		t.Fatalf("quick command = %+v, %v", res, err)
	}

	res, err = callAs(t, ex, "main", ws, map[string]any{"command": "echo first; read line; echo got:$line; exit 4", "yieldMs": 200})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Details.(*Details)
	if d.Status != "running" || d.SessionID == "" || d.PID == 0 || !strings.Contains(res.Text, "first") {
		t.Fatalf("backgrounded = %+v %q", d, res.Text)
	}
	id := d.SessionID
	if _, err := callAs(t, proc, "other", ws, map[string]any{"action": "poll", "sessionId": id}); err == nil || !strings.Contains(err.Error(), "No session found") {
		t.Errorf("another agent polled the session: %v", err)
	}
	list, _ := callAs(t, proc, "main", ws, map[string]any{"action": "list"})
	if ss := list.Details.(*ProcessDetails).Sessions; len(ss) != 1 || ss[0].SessionID != id || ss[0].Status != "running" {
		t.Errorf("list = %+v", list.Details)
	}
	poll, _ := callAs(t, proc, "main", ws, map[string]any{"action": "poll", "sessionId": id})
	if !strings.Contains(poll.Text, "Process still running.") {
		t.Errorf("poll while waiting for input = %q", poll.Text)
	}
	if _, err := callAs(t, proc, "main", ws, map[string]any{"action": "write", "sessionId": id, "data": "hello\n"}); err != nil {
		t.Fatal(err)
	}
	poll, _ = callAs(t, proc, "main", ws, map[string]any{"action": "poll", "sessionId": id, "timeout": 5000})
	for !strings.Contains(poll.Text, "Process exited") {
		more, _ := callAs(t, proc, "main", ws, map[string]any{"action": "poll", "sessionId": id, "timeout": 5000})
		poll.Text += more.Text
		poll.Details = more.Details
		if more.Details.(*ProcessDetails).Status != "running" {
			break
		}
	}
	if !strings.Contains(poll.Text, "got:hello") || !strings.Contains(poll.Text, "Process exited with code 4.") {
		t.Errorf("poll after input = %q", poll.Text)
	}
	if pd := poll.Details.(*ProcessDetails); pd.Status != "completed" || pd.ExitCode == nil || *pd.ExitCode != 4 {
		t.Errorf("details = %+v", pd)
	}
	logRes, _ := callAs(t, proc, "main", ws, map[string]any{"action": "log", "sessionId": id, "offset": 1, "limit": 1})
	if logRes.Text != "got:hello" {
		t.Errorf("log line 1 = %q", logRes.Text)
	}

	// background: true returns at once; kill ends the whole group.
	marker := filepath.Join(ws, "late")
	res, err = callAs(t, ex, "main", ws, map[string]any{"command": "(sleep 1; touch " + marker + ") & sleep 30", "background": true})
	if err != nil || res.Details.(*Details).Status != "running" {
		t.Fatalf("background = %+v, %v", res, err)
	}
	id2 := res.Details.(*Details).SessionID
	killed, err := callAs(t, proc, "main", ws, map[string]any{"action": "kill", "sessionId": id2})
	if err != nil || killed.Details.(*ProcessDetails).Status != "killed" {
		t.Fatalf("kill = %+v, %v", killed, err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child of the killed command survived and wrote its file")
	}
	if _, err := callAs(t, proc, "main", ws, map[string]any{"action": "clear", "sessionId": id2}); err != nil {
		t.Errorf("clear: %v", err)
	}
	if _, err := callAs(t, proc, "main", ws, map[string]any{"action": "poll", "sessionId": id2}); err == nil {
		t.Error("a cleared session still answers")
	}
}

// A command's own timeout still applies after it went to the background,
// and the registry's Close kills what is left.
func TestBackgroundTimeoutAndClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	ws := workspace(t)
	jobs := NewJobs(JobsConfig{})
	ex, proc := New(Config{Jobs: jobs}), NewProcessTool(jobs)
	res, _ := callAs(t, ex, "main", ws, map[string]any{"command": "sleep 30", "background": true, "timeoutSeconds": 0.3})
	id := res.Details.(*Details).SessionID
	poll, _ := callAs(t, proc, "main", ws, map[string]any{"action": "poll", "sessionId": id, "timeout": 10000})
	if !strings.Contains(poll.Text, "Command timed out after 0.3 seconds.") {
		t.Errorf("poll after the timeout = %q", poll.Text)
	}
	res, _ = callAs(t, ex, "main", ws, map[string]any{"command": "sleep 30", "background": true})
	if res.Details.(*Details).Status != "running" {
		t.Fatal("not backgrounded")
	}
	done := make(chan struct{})
	go func() { jobs.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not kill the running command")
	}
	if _, err := callAs(t, ex, "main", ws, map[string]any{"command": "sleep 5", "background": true}); err == nil {
		t.Error("a closed registry took a new background command")
	}
}

// Without the registry (no process tool), yieldMs and background are
// ignored: the command runs in the foreground.
func TestForegroundWithoutJobs(t *testing.T) {
	ws := workspace(t)
	res, err := callAs(t, New(Config{Jobs: NewJobs(JobsConfig{})}).Foreground(), "main", ws, map[string]any{"command": "sleep 0.3; echo done", "background": true, "yieldMs": 10})
	if err != nil || res.Text != "done\n" {
		t.Fatalf("foreground = %+v, %v", res, err)
	}
}

func TestKeyInput(t *testing.T) {
	for in, want := range map[string]string{"Enter": "\r", "C-c": "\x03", "c-D": "\x04", "Up": "\x1b[A", "ls -l": "ls -l", "C-": "C-"} {
		if got := keyInput(in); got != want {
			t.Errorf("keyInput(%q) = %q, want %q", in, got, want)
		}
	}
}
