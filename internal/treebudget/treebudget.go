// Package treebudget reads the budgets of session trees for the session
// tools and the gateway: a session's budget view (sessions_list,
// sessions.list) and sessions_send's refusal when a tree's budget is
// spent. The runner keeps the trees; it is reached through Budgets.
package treebudget

import (
	"context"
	"fmt"
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

// SendRefusal decides a sessions_send from session from to session
// to against the budgets of their session trees: none of the sender's may
// be spent (the flow's reply-back turns run there), and each of the
// target's must have a run left for the message's. The text is the tool
// result the model reads ("" when the message may go).
func SendRefusal(ctx context.Context, runner Budgets, from, to string) (string, error) {
	now := time.Now()
	check := func(key string, starts bool) (string, error) {
		if key == "" {
			return "", nil
		}
		trees, err := runner.Budgets(ctx, key)
		if err != nil {
			return "", fmt.Errorf("budgets of %s: %w", key, err)
		}
		for _, t := range trees {
			if why := spend.Exhausted(t.Limits, t.Used, now); why != "" {
				return fmt.Sprintf("Budget exhausted: %s for the session tree of %s; the message was not sent.", why, t.Key), nil
			}
			if runs := max(t.Used.Runs, t.Committed); starts && t.Limits.Runs > 0 && runs+1 > t.Limits.Runs {
				return fmt.Sprintf("Budget: maxRuns %d reached (%d runs accepted) in the session tree of %s; the message was not sent.",
					t.Limits.Runs, runs, t.Key), nil
			}
		}
		return "", nil
	}
	if why, err := check(from, false); why != "" || err != nil {
		return why, err
	}
	return check(to, true)
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
