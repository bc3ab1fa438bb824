package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Guard kinds (Refusal.Kind), as the refusal counters name them.
const (
	// GuardLoop is the agent chain's hop and visit limits
	// (tools.agentToAgent.maxChainHops, maxChainVisits).
	GuardLoop = "loop"
	// GuardBudget is the session trees' budgets.
	GuardBudget = "budget"
	// GuardDepth is the sub-agent depth limit (maxSpawnDepth).
	GuardDepth = "depth"
	// GuardFanOut is the active children limit (maxChildrenPerAgent).
	GuardFanOut = "fanout"
)

// Refusal is a guard's refusal of a message: Text is what its sender
// reads (the model, for sessions_send and sessions_spawn), Kind the guard.
type Refusal struct {
	Kind string
	// Status is the tool result's status ("error", "forbidden").
	Status string
	Text   string
}

// Error is the refusal's text.
func (r *Refusal) Error() string { return r.Text }

// RefusalKind names the guard that refused (for the refusal counters).
func (r *Refusal) RefusalKind() string { return r.Kind }

// Budgets reads the budget trees a session belongs to (*agent.Runner).
type Budgets interface {
	Budgets(ctx context.Context, sessionKey string) ([]agent.BudgetNode, error)
}

// Guards are the limits admission applies to the messages agents send
// each other (Rule.Guards) and that sessions_spawn asks about (Spawn).
type Guards struct {
	// Chain bounds agent chains; zero: unbounded.
	Chain tools.ChainLimits
	// Budgets, when set, reads the session trees' budgets.
	Budgets Budgets
}

// checkChain refuses a message whose chain of causes (already extended to
// its target, as the sender passes it on) is past the hop or visit limit.
func (g Guards) checkChain(chain *tools.Chain) *Refusal {
	if chain == nil || len(chain.Path) == 0 {
		return nil
	}
	target := chain.Path[len(chain.Path)-1]
	prev := tools.Chain{ID: chain.ID, Hops: chain.Hops - 1, Path: chain.Path[:len(chain.Path)-1]}
	if why := prev.CheckNext(target, g.Chain); why != "" {
		return &Refusal{Kind: GuardLoop, Status: "error", Text: why}
	}
	return nil
}

// SendBudget decides a message from session from to session to against
// the budgets of their session trees: none of the sender's may be spent
// (the flow's reply-back turns run there), and each of the target's must
// have a run left for the message's.
func (g Guards) SendBudget(ctx context.Context, from, to string, now time.Time) (*Refusal, error) {
	if g.Budgets == nil {
		return nil, nil
	}
	check := func(key string, starts bool) (*Refusal, error) {
		if key == "" {
			return nil, nil
		}
		trees, err := g.Budgets.Budgets(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("admission: budgets of %s: %w", key, err)
		}
		for _, t := range trees {
			if why := spend.Exhausted(t.Limits, t.Used, now); why != "" {
				return &Refusal{Kind: GuardBudget, Status: "error",
					Text: fmt.Sprintf("Budget exhausted: %s for the session tree of %s; the message was not sent.", why, t.Key)}, nil
			}
			if runs := max(t.Used.Runs, t.Committed); starts && t.Limits.Runs > 0 && runs+1 > t.Limits.Runs {
				return &Refusal{Kind: GuardBudget, Status: "error",
					Text: fmt.Sprintf("Budget: maxRuns %d reached (%d runs accepted) in the session tree of %s; the message was not sent.",
						t.Limits.Runs, runs, t.Key)}, nil
			}
		}
		return nil, nil
	}
	if r, err := check(from, false); r != nil || err != nil {
		return r, err
	}
	return check(to, true)
}

// SpawnLimits decides the limits a sessions_spawn meets first: the
// requester's sub-agent depth against maxSpawnDepth, then its running
// children against maxChildrenPerAgent (the reference's texts).
func (g Guards) SpawnLimits(depth, maxDepth, active, maxChildren int) *Refusal {
	if d := policy.CheckSpawnDepth(depth, maxDepth); d != nil {
		return &Refusal{Kind: GuardDepth, Status: d.Status, Text: d.Message}
	}
	if d := policy.CheckActiveChildren(active, maxChildren); d != nil {
		return &Refusal{Kind: GuardFanOut, Status: d.Status, Text: d.Message}
	}
	return nil
}

// SpawnChain decides the agent chain of a sessions_spawn: the child's run
// continues the requester's chain.
func (g Guards) SpawnChain(chain tools.Chain, childKey string) *Refusal {
	next := chain.Next(childKey)
	return g.checkChain(&next)
}

// SpawnBudget decides a sessions_spawn against the budgets of the
// requester's session trees: a refusal when one of them is spent or
// already runs its most children at once (active counts a tree's running
// descendants); otherwise the child's own limits, the tightest of limits
// (what the call and the child's agent ask for) and what each tree has
// left.
func (g Guards) SpawnBudget(ctx context.Context, requester string, limits spend.Limits, active func(treeKey string) int, now time.Time) (spend.Limits, *Refusal, error) {
	if g.Budgets == nil {
		return limits, nil, nil
	}
	trees, err := g.Budgets.Budgets(ctx, requester)
	if err != nil {
		return spend.Limits{}, nil, fmt.Errorf("admission: budgets of %s: %w", requester, err)
	}
	for _, t := range trees {
		used := t.Used
		if why := spend.Exhausted(t.Limits, used, now); why != "" {
			return spend.Limits{}, &Refusal{Kind: GuardBudget, Status: "error",
				Text: fmt.Sprintf("Budget exhausted: %s for the session tree of %s; no sub-agent can start.", why, t.Key)}, nil
		}
		used.Children = active(t.Key)
		// Sub-agents accepted but not started yet will each need a run:
		// a burst of spawns is refused here, where the model reads why,
		// not stopped one by one as its children start.
		used.Runs = max(used.Runs, t.Committed)
		if why := spend.ChildRefused(t.Limits, used); why != "" {
			return spend.Limits{}, &Refusal{Kind: GuardBudget, Status: "error",
				Text: fmt.Sprintf("Budget: %s in the session tree of %s; wait for one to finish.", why, t.Key)}, nil
		}
		left := spend.Remaining(t.Limits, used, now)
		left.ConcurrentChildren = 0 // a tree's concurrency is its own, not handed down
		limits = spend.Tighter(limits, left)
	}
	return limits, nil, nil
}

// guard applies the guards to a message another session's agent sends:
// its chain, then the sender's and the target's budgets.
func (a *Admitter) guard(ctx context.Context, in agent.Input) error {
	if r := a.cfg.Guards.checkChain(in.Chain); r != nil {
		return r
	}
	from := ""
	if in.Provenance != nil {
		from = in.Provenance.SourceSessionKey
	}
	r, err := a.cfg.Guards.SendBudget(ctx, from, in.SessionKey, a.now())
	if err != nil {
		return err
	}
	if r != nil {
		return r
	}
	return nil
}
