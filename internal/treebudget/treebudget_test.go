package treebudget

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
)

type trees struct {
	nodes []agent.BudgetNode
	err   error
	asked []string
}

func (t *trees) Budgets(_ context.Context, key string) ([]agent.BudgetNode, error) {
	t.asked = append(t.asked, key)
	return t.nodes, t.err
}

type children map[string]int

func (c children) ActiveDescendants(key string) int { return c[key] }

func resolve(t *testing.T, src string) *settings.Settings {
	t.Helper()
	cfg, _, err := config.Parse("t.json5", []byte(src), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	return settings.Resolve(cfg)
}

func TestView(t *testing.T) {
	budgeted := resolve(t, `{agents: {list: [{id: "main"}, {id: "capped", budget: {maxRuns: 3}}]}}`)
	spawned := json.RawMessage(`{"budget":{"maxTokens":100}}`)

	t.Run("no budget: no view, no lookup", func(t *testing.T) {
		tr := &trees{}
		v, err := View(t.Context(), tr, nil, budgeted, &store.Session{Key: "agent:main:main", AgentID: "main"})
		if v != nil || err != nil || len(tr.asked) != 0 {
			t.Fatalf("View = %+v, %v; looked up %q", v, err, tr.asked)
		}
	})
	t.Run("a sub-agent has no view from its agent's budget", func(t *testing.T) {
		tr := &trees{}
		s := &store.Session{Key: "agent:capped:subagent:x", AgentID: "capped", SpawnedBy: "agent:capped:main"}
		if v, err := View(t.Context(), tr, nil, budgeted, s); v != nil || err != nil {
			t.Fatalf("View = %+v, %v", v, err)
		}
	})
	t.Run("agent budget roots the tree", func(t *testing.T) {
		key := "agent:capped:main"
		tr := &trees{nodes: []agent.BudgetNode{
			{Key: "agent:capped:other", Limits: spend.Limits{Runs: 1}},
			{Key: key, Limits: spend.Limits{Runs: 3}, Used: spend.Usage{Runs: 1, Tokens: 40, Cost: 0.5}},
		}}
		v, err := View(t.Context(), tr, children{key: 2}, budgeted, &store.Session{Key: key, AgentID: "capped"})
		if err != nil || v == nil {
			t.Fatalf("View = %+v, %v", v, err)
		}
		if v.Limits.Runs != 3 || v.Used.Runs != 1 || v.Used.Tokens != 40 || v.Used.Cost != 0.5 || v.Used.Children != 2 {
			t.Errorf("view %+v", v)
		}
		if v.Exhausted != "" {
			t.Errorf("1 of 3 runs used, yet exhausted: %q", v.Exhausted)
		}
	})
	t.Run("exhausted when the next run has no room", func(t *testing.T) {
		key := "agent:capped:main"
		tr := &trees{nodes: []agent.BudgetNode{{Key: key, Limits: spend.Limits{Runs: 3}, Used: spend.Usage{Runs: 3}}}}
		v, err := View(t.Context(), tr, nil, budgeted, &store.Session{Key: key, AgentID: "capped"})
		if err != nil || v == nil || v.Exhausted == "" {
			t.Fatalf("View = %+v, %v; want exhausted", v, err)
		}
		if v.Used.Children != 0 {
			t.Errorf("children %d without a sub-agent manager", v.Used.Children)
		}
	})
	t.Run("a spawned session's own limits", func(t *testing.T) {
		key := "agent:main:subagent:y"
		tr := &trees{nodes: []agent.BudgetNode{{Key: key, Limits: spend.Limits{Tokens: 100}, Used: spend.Usage{Tokens: 99}}}}
		s := &store.Session{Key: key, AgentID: "main", SpawnedBy: "agent:main:main", Extra: spawned}
		v, err := View(t.Context(), tr, nil, budgeted, s)
		if err != nil || v == nil || v.Limits.Tokens != 100 || v.Used.Tokens != 99 {
			t.Fatalf("View = %+v, %v", v, err)
		}
		if len(tr.asked) != 1 || tr.asked[0] != key {
			t.Errorf("looked up %q", tr.asked)
		}
	})
	t.Run("not a root of its trees", func(t *testing.T) {
		tr := &trees{nodes: []agent.BudgetNode{{Key: "agent:capped:elsewhere"}}}
		v, err := View(t.Context(), tr, nil, budgeted, &store.Session{Key: "agent:capped:main", AgentID: "capped"})
		if v != nil || err != nil {
			t.Fatalf("View = %+v, %v", v, err)
		}
	})
	t.Run("lookup error", func(t *testing.T) {
		boom := errors.New("store down")
		_, err := View(t.Context(), &trees{err: boom}, nil, budgeted, &store.Session{Key: "agent:capped:main", AgentID: "capped"})
		if !errors.Is(err, boom) {
			t.Fatalf("err %v", err)
		}
	})
}
