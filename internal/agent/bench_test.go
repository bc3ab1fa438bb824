package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// BenchmarkWarmRun measures the runner's overhead for one run on a warm
// session with an instant model: submit, user message stored, one model
// turn, assistant message stored, run finished, waiter woken.
func BenchmarkWarmRun(b *testing.B) {
	reply := textReply("ok")
	h := newHarness(b, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return reply, nil
	}, func(c *Config) { c.HistoryLimit = 50 })
	ctx := context.Background()
	h.submit(Input{RunID: "warm", Message: "warm up"})
	h.wait("warm")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprint("r", i)
		if _, _, err := h.runner.Submit(ctx, Input{RunID: id, SessionKey: "agent:main:main", AgentID: "main", Message: "hi"}); err != nil {
			b.Fatal(err)
		}
		run, done, err := h.runner.Wait(ctx, id, -1)
		if err != nil || !done || run.Status != store.RunOK {
			b.Fatalf("run %s: %v %v %+v", id, done, err, run)
		}
	}
}
