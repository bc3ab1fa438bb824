package subagent

import (
	"context"
	"iter"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// gated is a model whose calls on an input containing "[gate]" wait
// until gate is closed.
type gated struct {
	provider.Provider
	gate <-chan struct{}
}

func (g gated) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == provider.RoleUser {
			if strings.Contains(req.Messages[i].Text, "[gate]") {
				select {
				case <-g.gate:
				case <-ctx.Done():
				}
			}
			break
		}
	}
	return g.Provider.Stream(ctx, req)
}

// waitRun waits until run runID has ended.
func (e *env) waitRun(runID string) {
	e.t.Helper()
	if _, done, err := e.runner.Wait(context.Background(), runID, time.Minute); err != nil || !done {
		e.t.Fatalf("run %s did not end: %v", runID, err)
	}
}
