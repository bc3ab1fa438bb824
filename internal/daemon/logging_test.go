package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
)

// writeConfigText writes text as the state dir's config file.
func writeConfigText(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoggingSetup(t *testing.T) {
	dir := t.TempDir()
	ls := config.LogSettings{Level: "info", ConsoleLevel: "warn", ConsoleStyle: "pretty", File: filepath.Join(dir, "logs", "s.log")}
	var console strings.Builder
	l, err := newLogSetup(ls, "", "json", &console)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hello", "token", "s3cret-token", "apiKey", "sk-abc", "n", 1)
	l.Warn("careful", "password", "hunter2")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(ls.File)
	for _, secret := range []string{"s3cret-token", "sk-abc", "hunter2"} {
		if strings.Contains(string(file), secret) || strings.Contains(console.String(), secret) {
			t.Errorf("%q was logged", secret)
		}
	}
	if !strings.Contains(string(file), `"message":"hello"`) || !strings.Contains(string(file), `"message":"careful"`) {
		t.Errorf("file:\n%s", file)
	}
	// The console is at warn, in JSON (--log-format json).
	if c := console.String(); strings.Contains(c, "hello") || !strings.Contains(c, `"msg":"careful"`) {
		t.Errorf("console:\n%s", c)
	}
	for _, bad := range [][2]string{{"loud", ""}, {"", "xml"}} {
		if _, err := newLogSetup(ls, bad[0], bad[1], io.Discard); err == nil {
			t.Errorf("newLogSetup(%q, %q) accepted", bad[0], bad[1])
		}
	}
	// --log-level takes every level, in any case, and names them all when
	// it refuses one.
	for _, level := range config.LogLevels {
		l, err := newLogSetup(ls, " "+strings.ToUpper(level), "", io.Discard)
		if err != nil {
			t.Fatalf("--log-level %s: %v", level, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, err = newLogSetup(ls, "loud", "", io.Discard)
	if want := "want one of " + strings.Join(config.LogLevels, ", "); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("--log-level loud: %v, want it to end %q", err, want)
	}
}

// serve warns at start about a model that cannot run, naming the fix.
func TestStartWarnsAboutUnrunnableModel(t *testing.T) {
	dir := t.TempDir()
	writeConfigText(t, dir, `{agents: {defaults: {model: "openai/gpt-4o"}}}`)
	var logs strings.Builder
	port := 0
	d, err := Start(context.Background(), Options{
		Env:    config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if got := logs.String(); !strings.Contains(got, "no API key for provider openai") || !strings.Contains(got, "OPENAI_API_KEY") {
		t.Errorf("no warning about the missing key:\n%s", got)
	}
	mods := registry.New(d.Settings)
	_, err = mods.ResolveModel("main", "openai/gpt-4o")
	if err == nil || !strings.Contains(err.Error(), "no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey") {
		t.Errorf("ResolveModel = %v", err)
	}
}

// syncWriter serialises writes from the daemon's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
