package agent

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// meetingStore holds each FinishRun of the runs in meet until all of them
// are in FinishRun at once (or, when they never are, until a bound that
// only a failing runner reaches).
type meetingStore struct {
	Store
	mu      sync.Mutex
	meet    map[string]bool
	arrived int
	all     chan struct{}
	apart   bool // the bound passed: the finishes came one after another
}

func (m *meetingStore) FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error) {
	m.mu.Lock()
	if m.meet[runID] {
		m.arrived++
		if m.arrived == len(m.meet) {
			close(m.all)
		}
		m.mu.Unlock()
		select {
		case <-m.all:
		case <-time.After(3 * time.Second):
			m.mu.Lock()
			m.apart = true
			m.mu.Unlock()
		}
	} else {
		m.mu.Unlock()
	}
	return m.Store.FinishRun(ctx, runID, res)
}

// The runs a run carried end together: their writes go to the store at
// the same time (one commit of a store that groups its writes), not one
// after the other.
func TestCarriedRunsFinishTogether(t *testing.T) {
	toolStarted := make(chan struct{})
	releaseTool := make(chan struct{})
	var ms *meetingStore
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if len(req.Messages) == 1 {
			return toolTurn(provider.ToolCall{ID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)}), nil
		}
		return textReply("answered " + lastUser(req)), nil
	}, func(c *Config) {
		ms = &meetingStore{Store: c.Store, meet: map[string]bool{"s1": true, "s2": true}, all: make(chan struct{})}
		c.Store = ms
		c.Tools = slowTool(toolStarted, releaseTool)
	})
	const key = "agent:main:main"
	h.submit(Input{RunID: "a1", Message: "go"})
	<-toolStarted
	h.submit(Input{RunID: "s1", Message: "one", QueueMode: ModeSteer})
	h.submit(Input{RunID: "s2", Message: "two", QueueMode: ModeSteer})
	waitQueued(t, h.runner, key, 2)
	close(releaseTool)
	for _, id := range []string{"a1", "s1", "s2"} {
		if run := h.wait(id); run.Status != store.RunOK {
			t.Fatalf("run %s: %s (%s)", id, run.Status, run.Error)
		}
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.arrived != 2 {
		t.Fatalf("%d carried runs ended with FinishRun, want 2 (both steered into a1)", ms.arrived)
	}
	if ms.apart {
		t.Error("the carried runs' ends were written one after the other")
	}
}
