package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/tools"
)

func run(t *testing.T, tool *Tool, ws string, args map[string]any) (*tools.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: "agent:main:main", Workspace: ws})
	return tool.Call(ctx, raw)
}

func workspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestExecResults(t *testing.T) {
	ws := workspace(t)
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	tool := New(Config{})
	tests := []struct {
		name   string
		args   map[string]any
		want   string
		status string
		code   int
	}{
		{"output and cwd", map[string]any{"command": "echo hi; pwd"}, "hi\n" + ws + "\n", "completed", 0},
		{"stderr too", map[string]any{"command": "echo out; echo err >&2"}, "out\nerr\n", "completed", 0},
		{"no output", map[string]any{"command": "true"}, "(no output)", "completed", 0},
		{"exit code", map[string]any{"command": "echo partial; exit 3"}, "partial\n\n\n(Command exited with code 3)", "completed", 3},
		{"exit code no output", map[string]any{"command": "exit 3"}, "(no output)\n\n(Command exited with code 3)", "completed", 3},
		{"not found", map[string]any{"command": "definitely-not-a-command-xyz 2>/dev/null"}, "Command not found", "failed", 127},
		{"relative workdir", map[string]any{"command": "pwd", "workdir": "sub"}, ws + "/sub\n", "completed", 0},
		{"absolute workdir", map[string]any{"command": "pwd", "workdir": "/"}, "/\n", "completed", 0},
		{"env override", map[string]any{"command": `printf %s "$GREETING/$SWITCHBOARD_SHELL"`, "env": map[string]string{"GREETING": "hello"}}, "hello/exec", "completed", 0},
		{"stdin is empty", map[string]any{"command": "cat"}, "(no output)", "completed", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := run(t, tool, ws, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tc.want {
				t.Errorf("text = %q, want %q", res.Text, tc.want)
			}
			d := res.Details.(*Details)
			if d.Status != tc.status || d.ExitCode == nil || *d.ExitCode != tc.code {
				t.Errorf("details = %+v", d)
			}
		})
	}
}

func TestExecSignal(t *testing.T) {
	res, err := run(t, New(Config{}), workspace(t), map[string]any{"command": "echo before; kill -TERM $$"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "before\n\n\nCommand aborted by signal SIGTERM" {
		t.Errorf("text = %q", res.Text)
	}
	if d := res.Details.(*Details); d.Status != "failed" || d.ExitSignal != "SIGTERM" || d.ExitCode != nil {
		t.Errorf("details = %+v", d)
	}
}

// The timeout kills the whole process group: a child that would write a
// file after the deadline never does, and the call returns promptly.
func TestExecTimeoutKillsTree(t *testing.T) {
	ws := workspace(t)
	start := time.Now()
	res, err := run(t, New(Config{}), ws, map[string]any{
		"command":        "echo started; (sleep 5; echo late > late.txt) & echo $! > child.pid; sleep 30",
		"timeoutSeconds": 2, // time for a loaded machine to start the shell and its child
	})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !strings.HasPrefix(res.Text, "started\n\n\nCommand timed out after 2 seconds.") {
		t.Errorf("text = %q", res.Text)
	}
	if d := res.Details.(*Details); !d.TimedOut || d.Status != "failed" || d.ExitSignal != "SIGKILL" {
		t.Errorf("details = %+v", d)
	}
	// Killed, not run out: far below the command's own 30 s, whatever the
	// machine's load.
	if took > 10*time.Second {
		t.Errorf("returned after %v", took)
	}
	t.Logf("timeout of 2 s returned after %v", took)
	// Once the background child has ended, it either wrote its file or
	// was killed before it could.
	awaitExit(t, readPid(t, ws, "child.pid"))
	if _, err := os.Stat(filepath.Join(ws, "late.txt")); !os.IsNotExist(err) {
		t.Errorf("child survived the timeout: late.txt %v", err)
	}
}

func TestExecDefaultTimeout(t *testing.T) {
	res, err := run(t, New(Config{Timeout: 200 * time.Millisecond}), workspace(t), map[string]any{"command": "sleep 10"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, "Command timed out after 0.2 seconds.") {
		t.Errorf("text = %q", res.Text)
	}
	// timeoutSeconds 0 lifts the limit for the call.
	res, err = run(t, New(Config{Timeout: 100 * time.Millisecond}), workspace(t), map[string]any{"command": "sleep 0.3; echo ok", "timeoutSeconds": 0})
	if err != nil || res.Text != "ok\n" {
		t.Errorf("timeoutSeconds 0 = %v, %v", res, err)
	}
}

func TestExecCanceled(t *testing.T) {
	ws := workspace(t)
	ctx, cancel := context.WithCancel(tools.WithCaller(context.Background(), tools.Caller{Workspace: ws}))
	time.AfterFunc(150*time.Millisecond, cancel)
	start := time.Now()
	_, err := New(Config{}).Call(ctx, json.RawMessage(`{"command":"sleep 10"}`))
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("err = %v", err)
	}
	// Cancelled, not run out: well below the command's own 10 s, whatever
	// the machine's load.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cancel took %v", took)
	}
}

func TestExecOutputCap(t *testing.T) {
	res, err := run(t, New(Config{MaxOutputBytes: 100}), workspace(t), map[string]any{"command": "seq 1 10000"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, "1\n2\n3\n") || !strings.HasSuffix(res.Text, "9999\n10000\n") ||
		!strings.Contains(res.Text, " bytes of output omitted ...]") || len(res.Text) > 200 {
		t.Errorf("text = %q", res.Text)
	}
	if !res.Details.(*Details).Truncated {
		t.Error("not marked truncated")
	}
}

func TestExecPathPrepend(t *testing.T) {
	ws := workspace(t)
	bin := filepath.Join(ws, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "greet"), []byte("#!/bin/sh\necho from-prepend\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, New(Config{PathPrepend: []string{bin}}), ws, map[string]any{"command": "greet"})
	if err != nil || res.Text != "from-prepend\n" {
		t.Errorf("= %v, %v", res, err)
	}
}

func TestExecRefusals(t *testing.T) {
	ws := workspace(t)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "command required"},
		{map[string]any{"command": "   "}, "command required"},
		{map[string]any{"command": "echo", "workdir": "missing"}, "workdir unavailable: missing is not an existing directory"},
		{map[string]any{"command": "echo", "env": map[string]string{"PATH": "/tmp"}}, "Security Violation: Custom 'PATH' variable is forbidden during host execution."},
		{map[string]any{"command": "echo", "env": map[string]string{"LD_PRELOAD": "/x.so"}}, "Security Violation: Environment variable 'LD_PRELOAD' is forbidden during host execution."},
		{map[string]any{"command": "echo", "env": map[string]string{"LD_PRELOAD": "x", "PATH": "y", "1BAD": "z"}}, "Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: LD_PRELOAD, PATH; invalid non-portable override keys: 1BAD)."},
		{map[string]any{"command": "echo", "env": map[string]string{"A-B": "z"}}, "Security Violation: invalid non-portable override keys: A-B."},
		{map[string]any{"command": "echo", "env": map[string]any{"N": 1}}, "env.N must be a string"},
		{map[string]any{"command": "echo", "env": "x"}, "env must be an object"},
		{map[string]any{"command": "echo", "timeoutSeconds": -1}, "timeoutSeconds must be a non-negative number"},
		{map[string]any{"command": "echo", "timeoutSeconds": "5"}, "timeoutSeconds must be a non-negative number"},
		{map[string]any{"command": "echo", "host": "sandbox"}, "exec host=sandbox: no sandbox runtime"},
		{map[string]any{"command": "echo", "host": "example.com"}, `invalid host "example.com"`},
	}
	for _, tc := range tests {
		_, err := run(t, New(Config{}), ws, tc.args)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want prefix %q", tc.args, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("workspace changed: %v", entries)
	}
	// No workspace and no absolute workdir.
	_, err := New(Config{}).Call(context.Background(), json.RawMessage(`{"command":"echo"}`))
	if err == nil || !strings.HasPrefix(err.Error(), "no workspace") {
		t.Errorf("no workspace: %v", err)
	}
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		limit  int
		writes []string
		want   string
		trunc  bool
	}{
		{10, []string{"abc"}, "abc", false},
		{10, []string{"abcde", "fghij"}, "abcdefghij", false},
		{10, []string{"abcdefghijk"}, "abcde\n\n[... 1 bytes of output omitted ...]\n\nghijk", true},
		{10, []string{"ab", "cdefg", "hijkl", "mn"}, "abcde\n\n[... 4 bytes of output omitted ...]\n\njklmn", true},
		{6, []string{"aaa", "héllo"}, "aaa\n\n[... 3 bytes of output omitted ...]\n\nllo", true},
		{6, []string{"aaé", "bbbbbbbb"}, "aa\n\n[... 7 bytes of output omitted ...]\n\nbbb", true},
	}
	for _, tc := range tests {
		b := newCapBuffer(tc.limit)
		for _, w := range tc.writes {
			b.Write([]byte(w))
		}
		got, trunc := b.String()
		if got != tc.want || trunc != tc.trunc {
			t.Errorf("%d %q = %q %v, want %q %v", tc.limit, tc.writes, got, trunc, tc.want, tc.trunc)
		}
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add(`{"command":"echo hi","workdir":"sub","timeoutSeconds":1.5,"env":{"A":"b"}}`)
	f.Add(`{"command":"x","env":{"PATH":"/","LD_X":"y","1":"z"}}`)
	f.Add(`{"command":"x","timeoutSeconds":1e308,"host":"gateway"}`)
	f.Add(`{"command":"x","timeoutSeconds":null,"env":null}`)
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := parseArgs(json.RawMessage(raw))
		if err != nil {
			return
		}
		if strings.TrimSpace(r.Command) == "" || strings.ContainsRune(r.Command, 0) {
			t.Fatalf("accepted command %q", r.Command)
		}
		if r.Timeout < 0 || r.Timeout > maxTimeoutSeconds*time.Second {
			t.Fatalf("timeout %v", r.Timeout)
		}
		for k, v := range r.Env {
			if tools.BlockedExecEnv(k) || !envKeyRE().MatchString(k) || strings.ContainsRune(v, 0) {
				t.Fatalf("accepted env %q=%q", k, v)
			}
		}
	})
}

// A background child that keeps the output pipe open neither holds the
// call past the grace period nor outlives it.
func TestExecLeftoverBackgroundChild(t *testing.T) {
	ws := workspace(t)
	start := time.Now()
	res, err := run(t, New(Config{}), ws, map[string]any{"command": "echo a; (sleep 30; echo late > late.txt) & echo $! > child.pid"})
	if err != nil {
		t.Fatal(err)
	}
	// After the grace, not after the child's 30 s, whatever the load.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("returned after %v", took)
	}
	if res.Text != "a\n" {
		t.Errorf("text = %q", res.Text)
	}
	// Once the child has ended, it either wrote its file or was killed
	// before it could.
	awaitExit(t, readPid(t, ws, "child.pid"))
	if _, err := os.Stat(filepath.Join(ws, "late.txt")); !os.IsNotExist(err) {
		t.Errorf("background child outlived the call: %v", err)
	}
}
