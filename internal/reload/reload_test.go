package reload

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// logWatch is a slog handler that hands each record's message to a test.
type logWatch struct{ msgs chan string }

func (h logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (h logWatch) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	h.msgs <- msg
	return nil
}
func (h logWatch) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logWatch) WithGroup(string) slog.Handler      { return h }

// waitLog waits for a logged message containing want, skipping others.
func waitLog(t *testing.T, msgs <-chan string, want ...string) {
	t.Helper()
	for m := range msgs {
		if all(m, want) {
			return
		}
		t.Log(m)
	}
}

func all(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

type fixture struct {
	path string
	msgs chan string
	idle atomic.Bool
	done chan bool
}

// start writes an initial valid config and runs Wait on it.
func start(t *testing.T, ctx context.Context, initial string) *fixture {
	t.Helper()
	state := t.TempDir()
	f := &fixture{path: filepath.Join(t.TempDir(), "switchboard.json5"), msgs: make(chan string, 64), done: make(chan bool, 1)}
	f.write(t, initial)
	w := Watcher{
		Path: f.path, ConfigPath: f.path, Env: func(name string) string {
			if name == "SWITCHBOARD_STATE_DIR" {
				return state
			}
			return ""
		},
		Poll: time.Millisecond,
		Idle: func(context.Context) bool { return f.idle.Load() },
		Log:  slog.New(logWatch{f.msgs}),
	}
	base := ReadSum(f.path)
	go func() { f.done <- w.Wait(ctx, base) }()
	return f
}

func (f *fixture) write(t *testing.T, content string) {
	t.Helper()
	// Write and rename, as editors do, so the watcher never reads a torn file.
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
}

// result waits for Wait to return, logging what it logged meanwhile.
func (f *fixture) result(t *testing.T) bool {
	t.Helper()
	for {
		select {
		case ok := <-f.done:
			return ok
		case m := <-f.msgs:
			t.Log(m)
		}
	}
}

func TestValidChangeRestartsWhenIdle(t *testing.T) {
	f := start(t, t.Context(), `{}`)
	f.idle.Store(true)
	f.write(t, `{gateway: {port: 18800}}`)
	if !f.result(t) {
		t.Fatal("Wait = false after a valid change on an idle gateway")
	}
}

func TestChangeWaitsForRunsToEnd(t *testing.T) {
	f := start(t, t.Context(), `{}`)
	f.write(t, `{gateway: {port: 18800}}`)
	waitLog(t, f.msgs, "restarts to apply it when its running runs end")
	select {
	case <-f.done:
		t.Fatal("Wait returned while a run was running")
	default:
	}
	f.idle.Store(true)
	if !f.result(t) {
		t.Fatal("Wait = false once idle")
	}
}

func TestInvalidChangeIsSkipped(t *testing.T) {
	f := start(t, t.Context(), `{}`)
	f.idle.Store(true)
	f.write(t, `{gateway: {port: "not a port"}}`)
	waitLog(t, f.msgs, "config reload skipped (invalid config)", "gateway.port")
	select {
	case <-f.done:
		t.Fatal("Wait returned for an invalid config")
	default:
	}
	f.write(t, `{gateway: {port: 18801}}`)
	if !f.result(t) {
		t.Fatal("Wait = false after a valid change that followed an invalid one")
	}
}

func TestReloadOffOnlyLogs(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	f := start(t, ctx, `{}`)
	f.idle.Store(true)
	f.write(t, `{gateway: {reload: {mode: "off"}, port: 18802}}`)
	waitLog(t, f.msgs, `gateway.reload.mode is "off"`)
	cancel()
	if f.result(t) {
		t.Fatal("Wait = true with reload mode off")
	}
}

func TestReadSum(t *testing.T) {
	dir := t.TempDir()
	missing := ReadSum(filepath.Join(dir, "missing.json5"))
	if missing != (Sum{}) {
		t.Error("a missing file's Sum is not the zero Sum")
	}
	p := filepath.Join(dir, "c.json5")
	os.WriteFile(p, []byte(`{}`), 0o600)
	a := ReadSum(p)
	if a == missing || a != ReadSum(p) {
		t.Error("Sum of one file's content is not stable, or equals a missing file's")
	}
	os.WriteFile(p, []byte(`{ }`), 0o600)
	if ReadSum(p) == a {
		t.Error("changed content has the same Sum")
	}
	// An empty file is present: it differs from a missing one.
	os.WriteFile(p, nil, 0o600)
	if ReadSum(p) == missing {
		t.Error("an empty file has a missing file's Sum")
	}
}
