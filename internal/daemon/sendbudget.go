package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/spend"
)

// sendBudgetRefusal decides a sessions_send from session from to session
// to against the budgets of their session trees: none of the sender's may
// be spent (the flow's reply-back turns run there), and each of the
// target's must have a run left for the message's. The text is the tool
// result the model reads ("" when the message may go).
func sendBudgetRefusal(ctx context.Context, runner *agent.Runner, from, to string) (string, error) {
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
