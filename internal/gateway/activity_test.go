package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func TestRunsActive(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	now := time.Now()
	for _, s := range []*store.Session{
		{Key: "agent:main:main", SessionID: "s-root", AgentID: "main", TotalTokens: 30, InputTokens: 10, OutputTokens: 20, UpdatedAt: now},
		{Key: "agent:main:subagent:a", SessionID: "s-a", AgentID: "main", SpawnedBy: "agent:main:main", TotalTokens: 5, UpdatedAt: now},
	} {
		if err := e.store.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	cost := func(v float64) *transcript.Cost { return &transcript.Cost{Total: v} }
	for _, r := range []*store.Run{
		{RunID: "done-1", SessionKey: "agent:main:main", AgentID: "main", Status: store.RunOK, CreatedAt: now, Usage: transcript.Usage{Cost: cost(0.5)}},
		{RunID: "done-2", SessionKey: "agent:main:subagent:a", AgentID: "main", Lane: "subagent", Status: store.RunOK, CreatedAt: now, Usage: transcript.Usage{Cost: cost(0.25)}},
		{RunID: "run-1", SessionKey: "agent:main:subagent:a", AgentID: "main", Lane: "subagent", Status: store.RunRunning, CreatedAt: now, StartedAt: now},
		{RunID: "q-1", SessionKey: "agent:main:main", AgentID: "main", Status: store.RunQueued, CreatedAt: now},
	} {
		if err := e.store.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	c := e.connect(wire.ScopeRead)
	var res wire.RunsActiveResult
	c.ok(wire.MethodRunsActive, map[string]any{"limit": 1}, &res)
	lanes := map[string]string{}
	for _, r := range res.Runs {
		lanes[r.RunID] = r.Lane + "/" + r.Status
	}
	if len(res.Runs) != 2 || lanes["run-1"] != "subagent/running" || lanes["q-1"] != "main/queued" {
		t.Errorf("runs = %+v", res.Runs)
	}
	// limit 1 lists one recent session; the active runs' sessions and
	// their parents join it.
	rows := map[string]wire.ActivitySession{}
	for _, s := range res.Sessions {
		rows[s.Key] = s
	}
	if len(rows) != 2 || rows["agent:main:main"].Cost != 0.5 || rows["agent:main:main"].Runs != 2 || rows["agent:main:main"].TotalTokens != 30 ||
		rows["agent:main:subagent:a"].SpawnedBy != "agent:main:main" || rows["agent:main:subagent:a"].Cost != 0.25 {
		t.Errorf("sessions = %+v", res.Sessions)
	}
	for _, bad := range []map[string]any{{"limit": 0}, {"limit": 1001}, {"limit": "x"}, {"other": 1}} {
		if err := c.fail(wire.MethodRunsActive, bad); err.Code != wire.CodeInvalidRequest {
			t.Errorf("params %v: %+v", bad, err)
		}
	}
}
