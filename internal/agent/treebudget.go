package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Bounds of the budget bookkeeping.
const (
	// maxBudgetDepth bounds the spawn ancestors a run is counted against.
	maxBudgetDepth = 16
	// maxSeedSessions bounds the sessions read to seed a tree's use.
	maxSeedSessions = 10000
)

// ErrBudgetExhausted is the cause of a run ended by its session tree's
// budget.
var ErrBudgetExhausted = errors.New("budget exhausted")

// StopBudget is the stop reason of a run ended by its tree's budget.
const StopBudget = "budget"

// budgetError says which tree's budget stopped a run, and why.
type budgetError struct{ key, why string }

func (e *budgetError) Error() string {
	return fmt.Sprintf("%s: %s for the session tree of %s", ErrBudgetExhausted, e.why, e.key)
}

func (e *budgetError) Unwrap() error { return ErrBudgetExhausted }

// treeBudgets counts what each budgeted session tree has used since the
// gateway started, seeded from the store when a tree is first touched.
// A tree is a session (at its current sessionId: a reset starts a fresh
// budget) with every session spawned below it.
type treeBudgets struct {
	mu    sync.Mutex
	nodes map[string]*budgetNode // key + "\x00" + sessionId
}

// budgetNode is one budgeted tree.
type budgetNode struct {
	key    string
	limits spend.Limits
	used   spend.Usage // guarded by treeBudgets.mu
}

// BudgetNode is a budgeted session tree a session is counted against: its
// root, limits and use so far.
type BudgetNode struct {
	Key    string
	Limits spend.Limits
	Used   spend.Usage
	// Committed is, for a tree with maxRuns, the runs it has started or
	// queued (the accepted sub-agents' included): what its next
	// sub-agent's run comes on top of. Zero without maxRuns.
	Committed int64
}

// limitsOf returns a session's own budget: the limits set at its spawn,
// or, for a root session, its agent's configured budget.
func (r *Runner) limitsOf(s *store.Session) spend.Limits {
	if l := extraLimits.get(s.Extra); !l.IsZero() {
		return l
	}
	if s.SpawnedBy == "" && r.cfg.RootBudget != nil {
		return r.cfg.RootBudget(s.AgentID)
	}
	return spend.Limits{}
}

// budgetPath returns the budgeted trees a run of sess counts against:
// sess's own and its spawn ancestors', nearest first. Trees seen for the
// first time are seeded from the store. exclude is a run not to count
// while seeding (the run asking, already running).
func (r *Runner) budgetPath(ctx context.Context, sess *store.Session, exclude string) ([]*budgetNode, error) {
	var path []*budgetNode
	cur := sess
	for range maxBudgetDepth {
		if l := r.limitsOf(cur); !l.IsZero() {
			n, err := r.budgetNode(ctx, cur, l, exclude)
			if err != nil {
				return nil, err
			}
			path = append(path, n)
		}
		if cur.SpawnedBy == "" {
			break
		}
		parent, err := r.cfg.Store.GetSession(ctx, cur.SpawnedBy)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("budget: %w", err)
		}
		cur = parent
	}
	return path, nil
}

// budgetNode returns the tree rooted at s, seeding its use from the store
// when it is new: the ended runs of s and its descendants since s started.
func (r *Runner) budgetNode(ctx context.Context, s *store.Session, l spend.Limits, exclude string) (*budgetNode, error) {
	id := s.Key + "\x00" + s.SessionID
	r.budgets.mu.Lock()
	n, ok := r.budgets.nodes[id]
	r.budgets.mu.Unlock()
	if ok {
		return n, nil
	}
	used, _, err := r.treeUse(ctx, s, exclude)
	if err != nil {
		return nil, err
	}
	r.budgets.mu.Lock()
	defer r.budgets.mu.Unlock()
	if n, ok := r.budgets.nodes[id]; ok {
		return n, nil // seeded meanwhile by another run of the tree
	}
	if r.budgets.nodes == nil {
		r.budgets.nodes = map[string]*budgetNode{}
	}
	n = &budgetNode{key: s.Key, limits: l, used: used}
	r.budgets.nodes[id] = n
	return n, nil
}

// treeUse reads from the store what the tree rooted at s has used since
// s started (its runs but exclude, their tokens and cost), and how many
// of its runs are queued, not started yet.
func (r *Runner) treeUse(ctx context.Context, s *store.Session, exclude string) (used spend.Usage, queued int64, err error) {
	started := SessionStartedAt(s)
	used = spend.Usage{Started: started}
	keys := []string{s.Key}
	for i := 0; i < len(keys) && len(keys) < maxSeedSessions; i++ {
		kids, err := r.cfg.Store.ListSessions(ctx, store.ListOptions{SpawnedBy: keys[i]})
		if err != nil {
			return used, 0, fmt.Errorf("budget: seed %s: %w", s.Key, err)
		}
		for _, k := range kids {
			keys = append(keys, k.Key)
		}
	}
	for _, k := range keys {
		runs, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: k})
		if err != nil {
			return used, 0, fmt.Errorf("budget: seed %s: %w", s.Key, err)
		}
		for _, run := range runs {
			if run.Status == store.RunQueued && !run.CreatedAt.Before(started) {
				queued++
			}
			if run.RunID == exclude || run.StartedAt.IsZero() || run.StartedAt.Before(started) {
				continue
			}
			used.Runs++
			used.Tokens += tokensOf(run.Usage)
			if run.Usage.Cost != nil {
				used.Cost += run.Usage.Cost.Total
			}
		}
	}
	return used, queued, nil
}

// tokensOf is the model tokens a usage counts against a budget.
func tokensOf(u transcript.Usage) int64 {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// budgetStart counts a starting run against its trees.
func (r *Runner) budgetStart(path []*budgetNode) {
	r.budgets.mu.Lock()
	defer r.budgets.mu.Unlock()
	for _, n := range path {
		n.used.Runs++
	}
}

// budgetCheck returns the error that ends a run whose trees are spent
// (nil while every one has something left).
func (r *Runner) budgetCheck(path []*budgetNode) error {
	if len(path) == 0 {
		return nil
	}
	now := r.now()
	r.budgets.mu.Lock()
	defer r.budgets.mu.Unlock()
	for _, n := range path {
		if why := spend.Exhausted(n.limits, n.used, now); why != "" {
			return &budgetError{key: n.key, why: why}
		}
	}
	return nil
}

// budgetCharge counts a model call's usage against the run's trees.
func (r *Runner) budgetCharge(path []*budgetNode, u transcript.Usage) {
	if len(path) == 0 {
		return
	}
	r.budgets.mu.Lock()
	defer r.budgets.mu.Unlock()
	for _, n := range path {
		n.used.Tokens += tokensOf(u)
		if u.Cost != nil {
			n.used.Cost += u.Cost.Total
		}
	}
}

// Budgets returns the budgeted trees sessionKey counts against, nearest
// first, with their use so far (none when no budget applies).
func (r *Runner) Budgets(ctx context.Context, sessionKey string) ([]BudgetNode, error) {
	s, err := r.cfg.Store.GetSession(ctx, sessionKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent.Budgets: %w", err)
	}
	path, err := r.budgetPath(ctx, s, "")
	if err != nil {
		return nil, fmt.Errorf("agent.Budgets: %w", err)
	}
	out := make([]BudgetNode, len(path))
	r.budgets.mu.Lock()
	for i, n := range path {
		out[i] = BudgetNode{Key: n.key, Limits: n.limits, Used: n.used}
	}
	r.budgets.mu.Unlock()
	for i := range out {
		if out[i].Limits.Runs <= 0 {
			continue
		}
		// The store also holds the runs accepted and not started, and
		// those started but not counted yet.
		root, err := r.cfg.Store.GetSession(ctx, out[i].Key)
		if err != nil {
			return nil, fmt.Errorf("agent.Budgets: %w", err)
		}
		used, queued, err := r.treeUse(ctx, root, "")
		if err != nil {
			return nil, fmt.Errorf("agent.Budgets: %w", err)
		}
		out[i].Committed = max(out[i].Used.Runs, used.Runs) + queued
	}
	return out, nil
}
