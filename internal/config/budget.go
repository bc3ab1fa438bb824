package config

import "math"

// Budget is "agents.defaults.budget" and "agents.list[].budget": the
// spending limits of a session tree rooted at a session of the agent (a
// session and every sub-agent spawned below it). Nil fields are unset; a
// per-agent field replaces the default's; 0 is no limit. Switchboard's own
// keys; the reference has no budgets.
type Budget struct {
	// MaxRuns bounds the agent runs started in the tree.
	MaxRuns *int `json:"maxRuns,omitempty"`
	// MaxTokens bounds the model tokens the tree's runs use.
	MaxTokens *int `json:"maxTokens,omitempty"`
	// MaxCost bounds the cost of the tree's model calls, priced from the
	// models' cost tables.
	MaxCost *float64 `json:"maxCost,omitempty"`
	// MaxWallTimeSeconds bounds the time from the tree's start to its last
	// model call.
	MaxWallTimeSeconds *int `json:"maxWallTimeSeconds,omitempty"`
	// MaxConcurrentChildren bounds the tree's sub-agents running at once.
	MaxConcurrentChildren *int `json:"maxConcurrentChildren,omitempty"`
}

// BudgetOf returns the effective budget of agentID: its own fields over
// agents.defaults.budget's.
func (c *Config) BudgetOf(agentID string) Budget {
	out := c.Agents.Defaults.Budget
	for _, a := range c.Agents.List {
		if norm(a.ID) != norm(agentID) {
			continue
		}
		b := a.Budget
		overPtr(&out.MaxRuns, b.MaxRuns)
		overPtr(&out.MaxTokens, b.MaxTokens)
		overPtr(&out.MaxCost, b.MaxCost)
		overPtr(&out.MaxWallTimeSeconds, b.MaxWallTimeSeconds)
		overPtr(&out.MaxConcurrentChildren, b.MaxConcurrentChildren)
	}
	return out
}

// budget checks one budget block: every limit is 0 (no limit) or more.
func (k *checker) budget(p keyPath, b Budget) {
	k.intMin(p.key("maxRuns"), b.MaxRuns, 0)
	k.intMin(p.key("maxTokens"), b.MaxTokens, 0)
	k.intMin(p.key("maxWallTimeSeconds"), b.MaxWallTimeSeconds, 0)
	k.intMin(p.key("maxConcurrentChildren"), b.MaxConcurrentChildren, 0)
	if b.MaxCost != nil && (*b.MaxCost < 0 || math.IsNaN(*b.MaxCost) || math.IsInf(*b.MaxCost, 0)) {
		k.fail(p.key("maxCost"), "must be 0 (no limit) or more, got %v", *b.MaxCost)
	}
}
