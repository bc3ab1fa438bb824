package subagent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/store"
)

// BenchmarkSpawn1000 is one requester turn that spawns 1000 children (the
// children limit raised in the config) against the instant scripted model,
// timed until every child's result has been announced to the requester and
// the requester has processed it.
func BenchmarkSpawn1000(b *testing.B) {
	const n = 1000
	var msg strings.Builder
	for range n {
		msg.WriteString(scripted.ToolDirective(SpawnToolName, map[string]any{"task": "work\n/reply done"}))
		msg.WriteByte('\n')
	}
	msg.WriteString("/then spawned")
	for i := range b.N {
		b.StopTimer()
		e := newEnv(b, `{ agents: { defaults: { subagents: { maxChildrenPerAgent: 2000 } } } }`)
		ctx := context.Background()
		key := "agent:main:boss"
		b.StartTimer()
		t0 := time.Now()
		if _, _, err := e.runner.Submit(ctx, agent.Input{RunID: "spawner", SessionKey: key, AgentID: "main", Message: msg.String()}); err != nil {
			b.Fatal(err)
		}
		// Poll cheaply: a one-row query while announces are pending, the
		// full count only when none is.
		for {
			if time.Since(t0) > 60*time.Second {
				b.Fatalf("not all of %d announced after 60s", n)
			}
			time.Sleep(10 * time.Millisecond)
			waiting, err := e.store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxPending}, Limit: 1})
			if err != nil {
				b.Fatal(err)
			}
			if len(waiting) > 0 || e.m.ActiveChildren(key) > 0 {
				continue
			}
			done, err := e.store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDelivered}})
			if err != nil {
				b.Fatal(err)
			}
			if len(done) == n {
				break
			}
		}
		announced := time.Since(t0)
		// Every announce run on the requester has finished.
		for !e.runnerIdle(key) {
			time.Sleep(2 * time.Millisecond)
		}
		processed := time.Since(t0)
		b.StopTimer()
		if i == 0 {
			b.ReportMetric(announced.Seconds(), "s-all-announced")
			b.ReportMetric(processed.Seconds(), "s-all-processed")
		}
	}
}

func (e *env) runnerIdle(key string) bool { return !e.runner.Busy(key) }

// BenchmarkSpawnCall times one sessions_spawn call: the spawn's writes
// and its child's queue and start, until the tool returns (the part of a
// spawn on its requester's path). The children wait on the gate, so their
// runs do not load the timing. At most 10,000 (the children limit):
// -benchtime 1000x.
func BenchmarkSpawnCall(b *testing.B) {
	e := newEnv(b, `{ agents: { defaults: { subagents: { maxChildrenPerAgent: 10000 } } } }`)
	b.Cleanup(func() { close(e.gate) })
	args := map[string]any{"task": "[gate]\n/reply done"}
	b.ResetTimer()
	for range b.N {
		if out, err := e.spawn("agent:main:main", args); err != nil || out["status"] != "accepted" {
			b.Fatalf("spawn = %v, %v", out, err)
		}
	}
}
