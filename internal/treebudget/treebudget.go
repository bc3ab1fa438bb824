// Package treebudget reads the budgets of session trees for the session
// tools and the gateway: a session's budget view (sessions_list,
// sessions.list). The runner keeps the trees; it is reached through
// Budgets. (sessions_send's refusal when a tree's budget is spent is
// admission's, internal/admission/guards.go.)
package treebudget

import (
	"context"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
)

// Budgets reads the budget trees above a session (agent.Runner).
type Budgets interface {
	Budgets(ctx context.Context, sessionKey string) ([]agent.BudgetNode, error)
}

// Descendants counts a session's sub-agents still running
// (subagent.Manager).
type Descendants interface {
	ActiveDescendants(key string) int
}

// View is the sessions_list budget of s when s roots a budgeted session
// tree (its own limits, or its agent's for a root session); subs may be
// nil.
func View(ctx context.Context, runner Budgets, subs Descendants, set *settings.Settings, s *store.Session) (*sessions.BudgetView, error) {
	if spend.FromExtra(s.Extra).IsZero() && (s.SpawnedBy != "" || set.Agent(s.AgentID).Budget.IsZero()) {
		return nil, nil
	}
	trees, err := runner.Budgets(ctx, s.Key)
	if err != nil {
		return nil, err
	}
	for _, t := range trees {
		if t.Key != s.Key {
			continue
		}
		v := &sessions.BudgetView{Limits: t.Limits, Used: sessions.BudgetUsed{Runs: t.Used.Runs, Tokens: t.Used.Tokens, Cost: t.Used.Cost}}
		if subs != nil {
			v.Used.Children = subs.ActiveDescendants(s.Key)
		}
		next := t.Used
		next.Runs++ // would another run have room?
		v.Exhausted = spend.Exhausted(t.Limits, next, time.Now())
		return v, nil
	}
	return nil, nil
}
