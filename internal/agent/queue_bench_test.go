package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// p99 returns the 99th percentile of ds.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99)/100-min(1, (len(s)*99)/100)]
}

// BenchmarkEnqueueBusy measures Submit of a message to a busy session with
// the cap raised: each op queues 1 message (stored before Submit returns).
// Reports the p99 enqueue latency and the heap growth after they drain.
func BenchmarkEnqueueBusy(b *testing.B) {
	release := make(chan struct{})
	h := newHarness(b, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if lastUser(req) == "busy" {
			<-release
		}
		return textReply("ok"), nil
	}, nil)
	ctx := context.Background()
	h.submit(Input{RunID: "busy", Message: "busy"})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, _, err := h.runner.Submit(ctx, Input{RunID: fmt.Sprint("q", i), SessionKey: "agent:main:main", AgentID: "main", Message: "hi",
			QueueMode: ModeFollowup, QueueCap: 1 << 30}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	close(release)
	// Draining b.N turns takes longer than the harness's usual wait.
	if _, done, err := h.runner.Wait(ctx, fmt.Sprint("q", b.N-1), 10*time.Minute); err != nil || !done {
		b.Fatalf("the queue did not drain: %v", err)
	}
	h.mu.Lock()
	h.events = nil // the harness's own event log is not the runner's memory
	h.mu.Unlock()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(p99(lat).Microseconds()), "p99-µs")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024, "heap-growth-KiB")
}

// BenchmarkSteerLatency measures, per op, the time from a running tool's
// end to the next model request that carries a steered message. Reports
// the p99.
func BenchmarkSteerLatency(b *testing.B) {
	toolRunning := make(chan struct{})
	toolEnd := make(chan time.Time, 1)
	lat := make([]time.Duration, 0, b.N)
	h := newHarness(b, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == provider.RoleUser && last.Text == "steer":
			lat = append(lat, time.Since(<-toolEnd))
			return textReply("ok"), nil
		case last.Role == provider.RoleUser:
			return toolTurn(provider.ToolCall{ID: "c1", Name: "work", Arguments: json.RawMessage(`{}`)}), nil
		}
		return textReply("ok"), nil
	}, func(c *Config) {
		c.Tools = func(context.Context, RunInfo) *tools.Set {
			return tools.NewSet(funcTool{"work", func(ctx context.Context, _ json.RawMessage) (*tools.Result, error) {
				toolRunning <- struct{}{}
				<-toolRunning
				toolEnd <- time.Now()
				return &tools.Result{Text: "done"}, nil
			}})
		}
	})
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		a := fmt.Sprint("a", i)
		h.submit(Input{RunID: a, Message: "go"})
		<-toolRunning
		if _, _, err := h.runner.Submit(ctx, Input{RunID: fmt.Sprint("s", i), SessionKey: "agent:main:main", AgentID: "main", Message: "steer", QueueMode: ModeSteer}); err != nil {
			b.Fatal(err)
		}
		toolRunning <- struct{}{}
		h.wait(a)
	}
	b.StopTimer()
	b.ReportMetric(float64(p99(lat).Microseconds()), "p99-µs")
}

// BenchmarkInterrupt measures, per op, how long after Submit of an
// interrupting message the active model call sees its context cancelled,
// and when the new turn's model call starts. Reports both p99s.
func BenchmarkInterrupt(b *testing.B) {
	inModel := make(chan struct{})
	cancelledAt := make(chan time.Time, 1)
	newTurnAt := make(chan time.Time, 1)
	h := newHarness(b, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if lastUser(req) == "long" {
			inModel <- struct{}{}
			<-ctx.Done()
			cancelledAt <- time.Now()
			return nil, ctx.Err()
		}
		newTurnAt <- time.Now()
		return textReply("ok"), nil
	}, nil)
	ctx := context.Background()
	var cancelLat, startLat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		h.submit(Input{RunID: fmt.Sprint("a", i), Message: "long"})
		<-inModel
		id := fmt.Sprint("i", i)
		t0 := time.Now()
		if _, _, err := h.runner.Submit(ctx, Input{RunID: id, SessionKey: "agent:main:main", AgentID: "main", Message: "now", QueueMode: ModeInterrupt}); err != nil {
			b.Fatal(err)
		}
		cancelLat = append(cancelLat, (<-cancelledAt).Sub(t0))
		startLat = append(startLat, (<-newTurnAt).Sub(t0))
		h.wait(id)
	}
	b.StopTimer()
	b.ReportMetric(float64(p99(cancelLat).Microseconds()), "cancel-p99-µs")
	b.ReportMetric(float64(p99(startLat).Microseconds()), "newturn-p99-µs")
}
