package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func TestObserve(t *testing.T) {
	m := New(Sources{
		Lanes: func() (int, int, int) { return 2, 5, 4 },
		Queues: func(n int) []agent.QueueDepth {
			if n != MaxQueueSeries {
				t.Errorf("queue series asked for %d", n)
			}
			return []agent.QueueDepth{{SessionKey: "agent:main:a", Queued: 4}, {SessionKey: "agent:main:b", Queued: 1}}
		},
		Gateway: func() (int, int64, int64, int64) { return 3, 100, 1, 7 },
		Outbox: func(context.Context) (map[string]int, error) {
			return map[string]int{"pending": 2, "dead": 1}, nil
		},
	}, nil)
	t0 := time.Unix(1000, 0)
	cost := &transcript.Cost{Total: 0.5}
	for _, ev := range []agent.Event{
		{RunID: "r1", AgentID: "main", Stream: agent.StreamLifecycle, Phase: agent.PhaseModel, ProviderID: "openai", ModelID: "gpt", Time: t0},
		{RunID: "r1", AgentID: "main", Stream: agent.StreamUsage, Usage: &transcript.Usage{Input: 10, Output: 5, Cost: cost}, Time: t0.Add(2 * time.Second)},
		{RunID: "r1", Stream: agent.StreamUsage, Usage: &transcript.Usage{Input: 99}}, // no model call open: ignored
		{RunID: "r1", Stream: agent.StreamTool, Phase: agent.PhaseResult, Tool: &agent.ToolEvent{Name: "exec", Result: &tools.Result{IsError: true}}},
		{RunID: "r1", Stream: agent.StreamTool, Phase: agent.PhaseResult, Tool: &agent.ToolEvent{Name: "exec", Result: &tools.Result{}}},
		{RunID: "r1", Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{Status: store.RunOK, StartedAt: t0, EndedAt: t0.Add(3 * time.Second)}},
		{RunID: "r2", Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{Status: store.RunError}},
	} {
		m.Observe(ev)
	}
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"runs ok", m.runs.with("ok").value(), 1},
		{"runs error", m.runs.with("error").value(), 1},
		{"input tokens", m.tokens.with("main", "openai/gpt", "input").value(), 10},
		{"output tokens", m.tokens.with("main", "openai/gpt", "output").value(), 5},
		{"cost", m.cost.with("main", "openai/gpt").value(), 0.5},
		{"tool errors", m.toolCalls.with("exec", "error").value(), 1},
		{"tool ok", m.toolCalls.with("exec", "ok").value(), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`switchboard_model_call_duration_seconds_sum{model="openai/gpt"} 2`,
		`switchboard_run_duration_seconds_sum{status="ok"} 3`,
		"switchboard_lanes_busy 2", "switchboard_lane_queued_runs 5", "switchboard_lane_queue_longest 4",
		`switchboard_session_queue_depth{session="agent:main:a"} 4`, `switchboard_session_queue_depth{session="agent:main:b"} 1`,
		"switchboard_connections 3", "switchboard_outbound_queued_bytes 100", "switchboard_events_dropped_total 7", "switchboard_slow_consumers_total 1",
		`switchboard_outbox_items{status="dead"} 1`, `switchboard_outbox_items{status="pending"} 2`,
		// Labels sorted by name; a histogram's buckets cumulative, with +Inf.
		"# TYPE switchboard_tokens_total counter\n",
		`switchboard_tokens_total{agent="main",kind="input",model="openai/gpt"} 10`,
		`switchboard_tool_calls_total{outcome="error",tool="exec"} 1`,
		"# TYPE switchboard_run_duration_seconds histogram\n",
		`switchboard_run_duration_seconds_bucket{status="ok",le="2.5"} 0`,
		`switchboard_run_duration_seconds_bucket{status="ok",le="5"} 1`,
		`switchboard_run_duration_seconds_bucket{status="ok",le="600"} 1`,
		`switchboard_run_duration_seconds_bucket{status="ok",le="+Inf"} 1`,
		`switchboard_run_duration_seconds_count{status="ok"} 1`,
		`switchboard_guardrail_refusals_total{kind="deadlock"} 0`,
		"go_goroutines ", "go_sched_gomaxprocs_threads ", `go_info{version="` + runtime.Version() + `"} 1`, "go_memstats_heap_alloc_bytes ", "go_memstats_next_gc_bytes ", "process_cpu_seconds_total ", "process_resident_memory_bytes ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

// Label values and help texts are escaped as the text format wants.
func TestEscaping(t *testing.T) {
	m := New(Sources{Queues: func(int) []agent.QueueDepth {
		return []agent.QueueDepth{{SessionKey: "a\"b\\c\nd", Queued: 1}}
	}}, nil)
	m.Observe(agent.Event{Stream: agent.StreamTool, Phase: agent.PhaseResult, Tool: &agent.ToolEvent{Name: `x"y`, Result: &tools.Result{}}})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`switchboard_session_queue_depth{session="a\"b\\c\nd"} 1` + "\n",
		`switchboard_tool_calls_total{outcome="ok",tool="x\"y"} 1` + "\n",
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("scrape lacks %q:\n%s", want, rec.Body.String())
		}
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
}

// A failing outbox count leaves that family out; the rest is served.
func TestOutboxError(t *testing.T) {
	m := New(Sources{Outbox: func(context.Context) (map[string]int, error) { return nil, errors.New("db down") }}, nil)
	m.Observe(agent.Event{Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{Status: store.RunOK}})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body := rec.Body.String(); !strings.Contains(body, `switchboard_runs_total{status="ok"} 1`) {
		t.Errorf("scrape with a failing source:\n%s", body)
	}
}

func BenchmarkScrape(b *testing.B) {
	m := New(Sources{
		Lanes:   func() (int, int, int) { return 100, 1000, 20 },
		Gateway: func() (int, int64, int64, int64) { return 1000, 0, 0, 0 },
		Outbox:  func(context.Context) (map[string]int, error) { return map[string]int{"pending": 5, "dead": 0}, nil },
	}, nil)
	for i := range 1000 {
		m.Observe(agent.Event{RunID: "r", Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{Status: store.RunStatus([]string{"ok", "error", "aborted"}[i%3])}})
	}
	h := m.Handler()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	}
}

// A gateway restarted in place (a config reload) counts on from the
// counters of the one before: no counter drops.
func TestCountersCarryAcrossGateways(t *testing.T) {
	counters := NewCounters()
	end := agent.Event{RunID: "r", Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{Status: store.RunOK}}
	first := New(Sources{Gateway: func() (int, int64, int64, int64) { return 1, 0, 2, 5 }}, counters)
	first.Observe(end)
	first.Observe(end)
	first.Retire()
	second := New(Sources{Gateway: func() (int, int64, int64, int64) { return 0, 0, 1, 1 }}, counters)
	second.Observe(end)
	rec := httptest.NewRecorder()
	second.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`switchboard_runs_total{status="ok"} 3`,
		"switchboard_slow_consumers_total 3",
		"switchboard_events_dropped_total 6",
	} {
		if !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

// The Go runtime's figures are read at scrape time: a collection shows
// in the cycle count, and the heap is within what the runtime mapped.
func TestRuntimeFigures(t *testing.T) {
	m := New(Sources{}, nil)
	scrape := func() map[string]float64 {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		out := map[string]float64{}
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			name, v, ok := strings.Cut(line, " ")
			if !ok || !strings.HasPrefix(name, "go_") || strings.Contains(name, "{") {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			out[name] = f
		}
		return out
	}
	before := scrape()
	runtime.GC()
	after := scrape()
	if after["go_gc_cycles_total"] < before["go_gc_cycles_total"]+1 {
		t.Errorf("go_gc_cycles_total %v after a collection, was %v", after["go_gc_cycles_total"], before["go_gc_cycles_total"])
	}
	if h, sys := after["go_memstats_heap_alloc_bytes"], after["go_memstats_sys_bytes"]; h <= 0 || sys < h {
		t.Errorf("heap %v, sys %v", h, sys)
	}
}
