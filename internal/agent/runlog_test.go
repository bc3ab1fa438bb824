package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// lockedBuffer is a bytes.Buffer a logger may write from any goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunEndedLogLine: a run's one INFO line names the run, session,
// agent, status, tokens and duration, in that order, with numbers as
// numbers.
func TestRunEndedLogLine(t *testing.T) {
	var out lockedBuffer
	reply := textReply("logged")
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return reply, nil
	}, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&out, nil)) })
	h.submit(Input{RunID: "run-log", Message: "hi"})
	h.wait("run-log")
	var line string
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, `"msg":"run ended"`) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no run ended line in %s", out.String())
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		vals[k.(string)] = v
	}
	want := "time level msg component runId sessionKey agentId status inputTokens outputTokens totalTokens durationMs"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys %q, want %q", got, want)
	}
	if vals["runId"] != "run-log" || vals["sessionKey"] != "agent:main:main" || vals["agentId"] != "main" ||
		vals["status"] != "ok" || vals["inputTokens"] != json.Number("10") || vals["outputTokens"] != json.Number("3") {
		t.Errorf("line %s", line)
	}
	if _, ok := vals["durationMs"].(json.Number); !ok {
		t.Errorf("durationMs %v is not a number", vals["durationMs"])
	}
}

// BenchmarkRunEndedLog is a run's "run ended" line through a JSON handler.
func BenchmarkRunEndedLog(b *testing.B) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	now := time.Now()
	fin := &store.Run{RunID: "c12-3456", SessionKey: "agent:main:load-12", AgentID: "main", Status: store.RunOK,
		Usage: transcript.Usage{Input: 1200, Output: 420, TotalTokens: 1620}, StartedAt: now, EndedAt: now.Add(1500 * time.Microsecond)}
	b.ReportAllocs()
	for b.Loop() {
		logEnded(log, fin)
	}
}

// TestRunStartedLogLine: a run's start is one DEBUG line naming the run,
// session and agent; at the default level nothing of it is made, not even
// its boxed arguments.
func TestRunStartedLogLine(t *testing.T) {
	run := &store.Run{RunID: "run-1", SessionKey: "agent:main:main", AgentID: "main"}
	info := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if n := testing.AllocsPerRun(50, func() { logStarted(info, run) }); n != 0 {
		t.Errorf("a dropped start line made %v allocations, want 0", n)
	}
	var out lockedBuffer
	logStarted(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})), run)
	var got map[string]any
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("start line %q: %v", out.String(), err)
	}
	if got["msg"] != "run started" || got["level"] != "DEBUG" || got["runId"] != "run-1" ||
		got["sessionKey"] != "agent:main:main" || got["agentId"] != "main" {
		t.Errorf("start line = %v", got)
	}
}
