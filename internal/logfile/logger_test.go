package logfile

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoggerLines: the console's text and the file's JSON lines carry the
// level as its name (custom levels too), the message under "message" in
// the file, and redact attributes named like a secret in any case.
func TestLoggerLines(t *testing.T) {
	var console bytes.Buffer
	path := filepath.Join(t.TempDir(), "x.log")
	l := NewLogger(Settings{Level: "trace", ConsoleLevel: "trace", File: path}, &console)
	l.Info("run ended", "runId", "r1", "apiKey", "k1", "X-Authorization", "Bearer k2", "secretive", "", "n", 3)
	l.Log(t.Context(), Level("trace"), "traced")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out := console.String()
	for _, want := range []string{"level=INFO", `msg="run ended"`, "runId=r1", "apiKey=[redacted]", "X-Authorization=[redacted]", "secretive=\"\"", "n=3", "level=DEBUG-4"} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %s:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("file lines = %q", lines)
	}
	var first, second map[string]any
	if json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil {
		t.Fatalf("file lines = %q", lines)
	}
	if first["level"] != "INFO" || first["message"] != "run ended" || first["apiKey"] != "[redacted]" ||
		first["X-Authorization"] != "[redacted]" || first["runId"] != "r1" || first["n"] != 3.0 || second["level"] != "DEBUG-4" {
		t.Errorf("file lines = %q", lines)
	}
}

func TestContainsFold(t *testing.T) {
	for _, tc := range []struct {
		s, sub string
		want   bool
	}{
		{"apiKey", "apikey", true},
		{"X-API_KEY", "api_key", true},
		{"Token", "token", true},
		{"tokens", "token", true},
		{"tok", "token", false},
		{"runId", "token", false},
		{"api-key", "api_key", false},
		{"", "token", false},
	} {
		if got := containsFold(tc.s, tc.sub); got != tc.want {
			t.Errorf("containsFold(%q, %q) = %v", tc.s, tc.sub, got)
		}
	}
}
