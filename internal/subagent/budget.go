package subagent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
)

// childBudget decides a spawn against the budgets of the requester's
// session trees. why is the tool error when one of them is spent or
// already runs its most children at once; otherwise limits are the
// child's own: the tightest of what each tree has left, the budget the
// call asked for (requested, the sessions_spawn "budget" argument) and
// the child agent's configured budget.
func (m *Manager) childBudget(ctx context.Context, requester, childAgent string, requested any) (limits spend.Limits, why string, err error) {
	if requested != nil {
		raw, err := json.Marshal(requested)
		if err != nil {
			return spend.Limits{}, "", fmt.Errorf("subagent: budget argument: %w", err)
		}
		asked, err := spend.Parse(raw)
		if err != nil {
			return spend.Limits{}, "Invalid budget: " + err.Error(), nil
		}
		limits = asked
	}
	limits = spend.Tighter(limits, m.cfg.Settings.Agent(childAgent).Budget)
	trees, err := m.cfg.Runner.Budgets(ctx, requester)
	if err != nil {
		return spend.Limits{}, "", fmt.Errorf("subagent: budgets of %s: %w", requester, err)
	}
	now := m.cfg.Now()
	for _, t := range trees {
		used := t.Used
		if why := spend.Exhausted(t.Limits, used, now); why != "" {
			return spend.Limits{}, fmt.Sprintf("Budget exhausted: %s for the session tree of %s; no sub-agent can start.", why, t.Key), nil
		}
		used.Children = m.ActiveDescendants(t.Key)
		// Sub-agents accepted but not started yet will each need a run:
		// a burst of spawns is refused here, where the model reads why,
		// not stopped one by one as its children start.
		used.Runs = max(used.Runs, t.Committed)
		if why := spend.ChildRefused(t.Limits, used); why != "" {
			return spend.Limits{}, fmt.Sprintf("Budget: %s in the session tree of %s; wait for one to finish.", why, t.Key), nil
		}
		left := spend.Remaining(t.Limits, used, now)
		left.ConcurrentChildren = 0 // a tree's concurrency is its own, not handed down
		limits = spend.Tighter(limits, left)
	}
	return limits, "", nil
}

// setBudget stores a spawned session's own limits in its entry.
func setBudget(s *store.Session, l spend.Limits) error {
	m := map[string]json.RawMessage{}
	if len(s.Extra) > 0 {
		if err := json.Unmarshal(s.Extra, &m); err != nil {
			return fmt.Errorf("session extra fields: %w", err)
		}
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	m[spend.ExtraKey] = b
	s.Extra, err = json.Marshal(m)
	return err
}
