package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestBudgetRunsSurviveRestart: a tree's maxRuns counts the runs it made
// before a restart (the count is seeded from the store), and a run past
// the limit ends with the budget error and stop reason before calling the
// model.
func TestBudgetRunsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	calls := 0
	newRunner := func() *Runner {
		r, err := New(Config{Store: st, Models: staticModels{&fakeProvider{fn: func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
			calls++
			return textReply("ok"), nil
		}}}, RootBudget: func(agentID string) spend.Limits {
			if agentID != "main" {
				t.Errorf("RootBudget(%q)", agentID)
			}
			return spend.Limits{Runs: 2}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
		return r
	}
	run := func(r *Runner, id string) *store.Run {
		t.Helper()
		if _, _, err := r.Submit(context.Background(), Input{RunID: id, SessionKey: "agent:main:main", AgentID: "main", Message: id}); err != nil {
			t.Fatal(err)
		}
		done, ok, err := r.Wait(context.Background(), id, 10*time.Second)
		if err != nil || !ok {
			t.Fatalf("Wait(%s) = %v, %v", id, ok, err)
		}
		return done
	}
	r1 := newRunner()
	for _, id := range []string{"r1", "r2"} {
		if got := run(r1, id); got.Status != store.RunOK {
			t.Fatalf("%s = %s %q", id, got.Status, got.Error)
		}
	}
	over := run(r1, "r3")
	if over.Status != store.RunError || over.StopReason != StopBudget || !strings.HasPrefix(over.Error, "budget exhausted: maxRuns 2 reached (3 runs) for the session tree of agent:main:main") {
		t.Fatalf("third run = %s %q %q", over.Status, over.StopReason, over.Error)
	}
	if calls != 2 {
		t.Errorf("model calls = %d, want 2 (the refused run never calls the model)", calls)
	}
	r1.Close()

	r2 := newRunner()
	defer r2.Close()
	if again := run(r2, "r4"); again.StopReason != StopBudget {
		t.Fatalf("after a restart = %s %q: the spent budget was forgotten", again.Status, again.Error)
	}
	trees, err := r2.Budgets(context.Background(), "agent:main:main")
	if err != nil || len(trees) != 1 || trees[0].Used.Runs != 4 || trees[0].Limits.Runs != 2 {
		t.Fatalf("Budgets = %+v, %v", trees, err)
	}
	if !errors.Is(&budgetError{key: "k", why: "w"}, ErrBudgetExhausted) {
		t.Error("a budget error is not ErrBudgetExhausted")
	}
}

// TestBudgetWallTime: wall time counts from the tree's start on the
// runner's clock.
func TestBudgetWallTime(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("ok"), nil
	}, func(c *Config) {
		c.Now = func() time.Time { return now }
		c.RootBudget = func(string) spend.Limits { return spend.Limits{WallTimeSeconds: 60} }
	})
	h.submit(Input{RunID: "w1", Message: "hi"})
	if got := h.wait("w1"); got.Status != store.RunOK {
		t.Fatalf("first run = %s %q", got.Status, got.Error)
	}
	now = now.Add(61 * time.Second)
	h.submit(Input{RunID: "w2", Message: "later"})
	if got := h.wait("w2"); got.StopReason != StopBudget || !strings.Contains(got.Error, "maxWallTimeSeconds 60 reached") {
		t.Fatalf("run after the wall time = %s %q", got.Status, got.Error)
	}
}

// BenchmarkBudgetPerRun is the budget bookkeeping one run of a spawned
// session adds: its tree path (its own and its parent's budget, both
// seeded), the start count, a check before a model call and the charge
// after it.
func BenchmarkBudgetPerRun(b *testing.B) {
	h := newHarness(b, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("ok"), nil
	}, func(c *Config) {
		c.RootBudget = func(string) spend.Limits { return spend.Limits{Tokens: 1 << 40, Runs: 1 << 40} }
	})
	h.submit(Input{RunID: "root", Message: "hi"})
	h.wait("root")
	ctx := context.Background()
	child, err := h.store.UpdateSession(ctx, "agent:main:subagent:x", true, func(s *store.Session) error {
		s.SessionID, s.AgentID, s.SpawnedBy = "child-sid", "main", "agent:main:main"
		s.Extra = []byte(`{"budget":{"maxTokens":1000000000}}`)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		path, err := h.runner.budgetPath(ctx, child, "")
		if err != nil || len(path) != 2 {
			b.Fatalf("path %d, %v", len(path), err)
		}
		h.runner.budgetStart(path)
		if err := h.runner.budgetCheck(path); err != nil {
			b.Fatal(err)
		}
		h.runner.budgetCharge(path, transcript.Usage{Input: 10, Output: 5})
	}
}
