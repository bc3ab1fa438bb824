package admission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// trees is a fixed answer to Budgets: the session trees of each key.
type trees map[string][]agent.BudgetNode

func (t trees) Budgets(_ context.Context, key string) ([]agent.BudgetNode, error) { return t[key], nil }

// TestGuardsByOrigin: a message another session's agent sends is stopped
// by admission's loop guard, with the text the model reads; no other
// origin carries an agent chain through the guards.
func TestGuardsByOrigin(t *testing.T) {
	// A chain at its third hop, as the sender passes it on (extended to
	// its target).
	chain := tools.Chain{ID: "c1", Hops: 3, Path: []string{"agent:main:a", "agent:main:b", "agent:main:main"}}
	want := "Loop protection: this would be hop 3 of agent chain c1, over the limit of 2 (tools.agentToAgent.maxChainHops). " +
		"Do not forward or delegate it again; answer with what you have."
	for _, o := range allOrigins {
		t.Run(string(o), func(t *testing.T) {
			e := newEnv(t, nil, policy.QueueConfig{}, func(c *admission.Config) {
				c.Guards = admission.Guards{Chain: tools.ChainLimits{MaxHops: 2}}
			})
			in := input(o, "agent:main:main", "hi")
			c := chain
			in.Chain = &c
			tk, err := e.adm.Accept(context.Background(), admission.Request{Origin: o, Input: in})
			if !rule(o).Guards {
				if err != nil || !tk.Created {
					t.Fatalf("%+v %v, want the run", tk, err)
				}
				return
			}
			var r *admission.Refusal
			if !errors.As(err, &r) || r.Kind != admission.GuardLoop || err.Error() != want {
				t.Fatalf("err = %v, want the loop guard's %q", err, want)
			}
		})
	}
	if !rule(admission.OriginAgent).Guards {
		t.Error("sessions_send's origin is not guarded")
	}
}

func TestChainGuard(t *testing.T) {
	lim := tools.ChainLimits{MaxHops: 8, MaxVisits: 2}
	cases := []struct {
		name  string
		chain *tools.Chain
		want  string
	}{
		{name: "no chain", chain: nil},
		{name: "first hop", chain: &tools.Chain{ID: "c", Hops: 1, Path: []string{"agent:main:b"}}},
		{name: "second visit", chain: &tools.Chain{ID: "c", Hops: 3, Path: []string{"agent:main:b", "agent:main:a", "agent:main:b"}}},
		{name: "third visit", chain: &tools.Chain{ID: "c", Hops: 5, Path: []string{"agent:main:b", "agent:main:a", "agent:main:b", "agent:main:a", "agent:main:b"}},
			want: "Loop protection: agent chain c has already reached agent:main:b 2 times, the limit (tools.agentToAgent.maxChainVisits). " +
				"The agents are going round in a loop: stop forwarding and answer with what you have."},
		{name: "ninth hop", chain: &tools.Chain{ID: "c", Hops: 9, Path: []string{"1", "2", "3", "4", "5", "6", "7", "8", "agent:main:b"}},
			want: "Loop protection: this would be hop 9 of agent chain c, over the limit of 8 (tools.agentToAgent.maxChainHops). " +
				"Do not forward or delegate it again; answer with what you have."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, policy.QueueConfig{}, func(c *admission.Config) { c.Guards = admission.Guards{Chain: lim} })
			in := input(admission.OriginAgent, "agent:main:b", "hi")
			in.Chain = tc.chain
			_, err := e.adm.Accept(context.Background(), admission.Request{Origin: admission.OriginAgent, Input: in})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want the run", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSendBudget(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	budgets := trees{
		"agent:main:spent":  {{Key: "agent:main:spent", Limits: spend.Limits{Tokens: 100}, Used: spend.Usage{Tokens: 100}}},
		"agent:main:full":   {{Key: "agent:main:full", Limits: spend.Limits{Runs: 2}, Used: spend.Usage{Runs: 1}, Committed: 2}},
		"agent:main:roomy":  {{Key: "agent:main:roomy", Limits: spend.Limits{Runs: 5}, Used: spend.Usage{Runs: 1}}},
		"agent:main:at-max": {{Key: "agent:main:at-max", Limits: spend.Limits{Runs: 2}, Used: spend.Usage{Runs: 2}}},
	}
	cases := []struct{ from, to, want string }{
		{from: "agent:main:roomy", to: "agent:main:roomy"},
		{from: "", to: "agent:main:none"},
		{from: "agent:main:spent", to: "agent:main:roomy",
			want: "Budget exhausted: maxTokens 100 reached (100 tokens used) for the session tree of agent:main:spent; the message was not sent."},
		{from: "agent:main:roomy", to: "agent:main:spent",
			want: "Budget exhausted: maxTokens 100 reached (100 tokens used) for the session tree of agent:main:spent; the message was not sent."},
		{from: "agent:main:roomy", to: "agent:main:full",
			want: "Budget: maxRuns 2 reached (2 runs accepted) in the session tree of agent:main:full; the message was not sent."},
		// The sender's own runs are not started by the message.
		{from: "agent:main:at-max", to: "agent:main:roomy"},
	}
	g := admission.Guards{Budgets: budgets}
	for _, tc := range cases {
		r, err := g.SendBudget(context.Background(), tc.from, tc.to, now)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if r != nil {
			got = r.Text
			if r.Kind != admission.GuardBudget {
				t.Errorf("%s → %s: kind %q", tc.from, tc.to, r.Kind)
			}
		}
		if got != tc.want {
			t.Errorf("%s → %s = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestSpawnGuards(t *testing.T) {
	g := admission.Guards{Chain: tools.ChainLimits{MaxHops: 2}, Budgets: trees{
		"agent:main:main": {{Key: "agent:main:main", Limits: spend.Limits{Runs: 10, ConcurrentChildren: 2}, Used: spend.Usage{Runs: 3}}},
		"agent:main:poor": {{Key: "agent:main:poor", Limits: spend.Limits{Cost: 1}, Used: spend.Usage{Cost: 1}}},
	}}
	limits := []struct {
		depth, maxDepth, active, maxChildren int
		kind, want                           string
	}{
		{depth: 0, maxDepth: 1, active: 0, maxChildren: 5},
		{depth: 1, maxDepth: 1, active: 0, maxChildren: 5, kind: admission.GuardDepth,
			want: "sessions_spawn is not allowed at this depth (current depth: 1, max: 1)"},
		{depth: 0, maxDepth: 2, active: 5, maxChildren: 5, kind: admission.GuardFanOut,
			want: "sessions_spawn has reached max active children for this session (5/5)"},
		{depth: 3, maxDepth: 2, active: 5, maxChildren: 5, kind: admission.GuardDepth, // depth first
			want: "sessions_spawn is not allowed at this depth (current depth: 3, max: 2)"},
	}
	for _, tc := range limits {
		r := g.SpawnLimits(tc.depth, tc.maxDepth, tc.active, tc.maxChildren)
		switch {
		case tc.want == "" && r != nil:
			t.Errorf("%+v refused: %v", tc, r)
		case tc.want != "" && (r == nil || r.Text != tc.want || r.Kind != tc.kind || r.Status != "forbidden"):
			t.Errorf("%+v = %+v, want %s %q (forbidden)", tc, r, tc.kind, tc.want)
		}
	}
	if r := g.SpawnChain(tools.Chain{ID: "c", Hops: 1, Path: []string{"agent:main:x"}}, "agent:main:subagent:1"); r != nil {
		t.Errorf("a second hop within the limit: %v", r)
	}
	if r := g.SpawnChain(tools.Chain{ID: "c", Hops: 2, Path: []string{"agent:main:x", "agent:main:y"}}, "agent:main:subagent:1"); r == nil || r.Kind != admission.GuardLoop {
		t.Errorf("a third hop over a limit of 2: %v", r)
	}
	now := time.Unix(1_000_000, 0)
	active := func(key string) int { return map[string]int{"agent:main:main": 1}[key] }
	got, r, err := g.SpawnBudget(context.Background(), "agent:main:main", spend.Limits{Runs: 20, Tokens: 500}, active, now)
	if err != nil || r != nil || got.Runs != 7 || got.Tokens != 500 || got.ConcurrentChildren != 0 {
		t.Errorf("a spawn with room = %+v %v %v, want maxRuns cut to the 7 left, maxTokens kept, no concurrency handed down", got, r, err)
	}
	full := func(string) int { return 2 }
	if _, r, _ := g.SpawnBudget(context.Background(), "agent:main:main", spend.Limits{}, full, now); r == nil ||
		r.Text != "Budget: maxConcurrentChildren 2 reached (2 sub-agents running) in the session tree of agent:main:main; wait for one to finish." {
		t.Errorf("a spawn at the concurrency limit = %v", r)
	}
	if _, r, _ := g.SpawnBudget(context.Background(), "agent:main:poor", spend.Limits{}, active, now); r == nil ||
		r.Text != "Budget exhausted: maxCost $1 reached ($1 spent) for the session tree of agent:main:poor; no sub-agent can start." {
		t.Errorf("a spawn from a spent tree = %v", r)
	}
}
