package subagent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// childBudget decides a spawn against the budgets of the requester's
// session trees (admission's Guards.SpawnBudget). why is the tool error
// when one of them is spent or already runs its most children at once;
// otherwise limits are the child's own: the tightest of what each tree
// has left, the budget the call asked for (requested, the sessions_spawn
// "budget" argument) and the child agent's configured budget.
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
	want := limits
	limits, refused, err := m.guards().SpawnBudget(ctx, requester, want, m.ActiveDescendants, m.cfg.Now())
	if err == nil && refused != nil {
		// A refusal counts only descendants the store has live.
		m.pruneActive(ctx, "")
		limits, refused, err = m.guards().SpawnBudget(ctx, requester, want, m.ActiveDescendants, m.cfg.Now())
	}
	if err != nil {
		return spend.Limits{}, "", fmt.Errorf("subagent: %w", err)
	}
	if refused != nil {
		return spend.Limits{}, refused.Text, nil
	}
	return limits, "", nil
}

// guards are admission's guards with the limits in force.
func (m *Manager) guards() admission.Guards {
	set := m.cfg.Settings
	return admission.Guards{Budgets: m.cfg.Runner,
		Chain: tools.ChainLimits{MaxHops: set.Sessions.MaxChainHops, MaxVisits: set.Sessions.MaxChainVisits}}
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
