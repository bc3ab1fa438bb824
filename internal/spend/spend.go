// Package spend owns the spending limits of a session tree (a session and
// every session spawned below it): how many runs, model tokens, cost, wall
// time and concurrently running children it may use. It is pure policy:
// the limits' wire and config form, what is left of them after some use,
// whether they are exhausted, and how a child's limits are cut from its
// parent's. The agent runner counts the use and calls it before each model
// call; the sub-agent manager splits limits at spawn.
package spend

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits are a budget's ceilings. A zero field is no limit.
type Limits struct {
	// Runs bounds the agent runs started in the tree.
	Runs int64 `json:"maxRuns,omitempty"`
	// Tokens bounds the model tokens (input and output) the tree's runs use.
	Tokens int64 `json:"maxTokens,omitempty"`
	// Cost bounds the cost of the tree's model calls, in the configured
	// prices' unit (USD), from each model's cost table.
	Cost float64 `json:"maxCost,omitempty"`
	// WallTimeSeconds bounds the time from the tree's start to its last
	// model call.
	WallTimeSeconds int64 `json:"maxWallTimeSeconds,omitempty"`
	// ConcurrentChildren bounds the sub-agents of the tree running at once.
	ConcurrentChildren int `json:"maxConcurrentChildren,omitempty"`
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// Validate rejects negative limits.
func (l Limits) Validate() error {
	var bad []string
	if l.Runs < 0 {
		bad = append(bad, "maxRuns")
	}
	if l.Tokens < 0 {
		bad = append(bad, "maxTokens")
	}
	if l.Cost < 0 || math.IsNaN(l.Cost) || math.IsInf(l.Cost, 0) {
		bad = append(bad, "maxCost")
	}
	if l.WallTimeSeconds < 0 {
		bad = append(bad, "maxWallTimeSeconds")
	}
	if l.ConcurrentChildren < 0 {
		bad = append(bad, "maxConcurrentChildren")
	}
	if bad != nil {
		return fmt.Errorf("spend: %s must be a non-negative number", strings.Join(bad, ", "))
	}
	return nil
}

// Parse decodes limits from their JSON form, refusing unknown keys and
// negative values.
func Parse(raw json.RawMessage) (Limits, error) {
	var l Limits
	if len(raw) == 0 || string(raw) == "null" {
		return l, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Limits{}, fmt.Errorf("spend: %w", err)
	}
	if dec.More() {
		return Limits{}, errors.New("spend: trailing data")
	}
	return l, l.Validate()
}

// Usage is what a tree has used so far.
type Usage struct {
	Runs   int64
	Tokens int64
	Cost   float64
	// Started is when the tree started (zero: unknown, no wall-time limit
	// applies).
	Started time.Time
	// Children counts the tree's sub-agents running now.
	Children int
}

// Exhausted returns why u has used up l before another model call at
// now ("" while something is left). Runs count the run asking.
func Exhausted(l Limits, u Usage, now time.Time) string {
	switch {
	case l.Runs > 0 && u.Runs > l.Runs:
		return fmt.Sprintf("maxRuns %d reached (%d runs)", l.Runs, u.Runs)
	case l.Tokens > 0 && u.Tokens >= l.Tokens:
		return fmt.Sprintf("maxTokens %d reached (%d tokens used)", l.Tokens, u.Tokens)
	case l.Cost > 0 && u.Cost >= l.Cost:
		return fmt.Sprintf("maxCost %s reached (%s spent)", money(l.Cost), money(u.Cost))
	case l.WallTimeSeconds > 0 && !u.Started.IsZero() && now.Sub(u.Started) >= time.Duration(l.WallTimeSeconds)*time.Second:
		return fmt.Sprintf("maxWallTimeSeconds %d reached (started %s ago)", l.WallTimeSeconds, now.Sub(u.Started).Round(time.Second))
	}
	return ""
}

// ChildRefused returns why the tree may not start another sub-agent
// ("" when it may): its runs are all used (the child's would be one
// more), or it already runs its most sub-agents at once.
func ChildRefused(l Limits, u Usage) string {
	if l.Runs > 0 && u.Runs >= l.Runs {
		return fmt.Sprintf("maxRuns %d reached (%d runs, a sub-agent would need one more)", l.Runs, u.Runs)
	}
	if l.ConcurrentChildren > 0 && u.Children >= l.ConcurrentChildren {
		return fmt.Sprintf("maxConcurrentChildren %d reached (%d sub-agents running)", l.ConcurrentChildren, u.Children)
	}
	return ""
}

// Remaining returns what is left of l after u at now: the ceilings a child
// spawned now may have at most. A used-up limit stays at its smallest
// positive value rather than turning into "no limit"; the parent's own
// budget, which the child's use is also counted against, refuses the rest.
func Remaining(l Limits, u Usage, now time.Time) Limits {
	out := Limits{ConcurrentChildren: l.ConcurrentChildren}
	if l.Runs > 0 {
		out.Runs = max(l.Runs-u.Runs, 1)
	}
	if l.Tokens > 0 {
		out.Tokens = max(l.Tokens-u.Tokens, 1)
	}
	if l.Cost > 0 {
		out.Cost = math.Max(l.Cost-u.Cost, math.SmallestNonzeroFloat64)
	}
	if l.WallTimeSeconds > 0 {
		left := l.WallTimeSeconds
		if !u.Started.IsZero() {
			left -= int64(now.Sub(u.Started) / time.Second)
		}
		out.WallTimeSeconds = max(left, 1)
	}
	return out
}

// Tighter returns, field by field, the stricter of a and b (a zero field
// is no limit, so the other one wins).
func Tighter(a, b Limits) Limits {
	pick := func(x, y int64) int64 {
		switch {
		case x == 0:
			return y
		case y == 0:
			return x
		}
		return min(x, y)
	}
	out := Limits{
		Runs:            pick(a.Runs, b.Runs),
		Tokens:          pick(a.Tokens, b.Tokens),
		WallTimeSeconds: pick(a.WallTimeSeconds, b.WallTimeSeconds),
	}
	out.ConcurrentChildren = int(pick(int64(a.ConcurrentChildren), int64(b.ConcurrentChildren)))
	switch {
	case a.Cost == 0:
		out.Cost = b.Cost
	case b.Cost == 0:
		out.Cost = a.Cost
	default:
		out.Cost = math.Min(a.Cost, b.Cost)
	}
	return out
}

// money formats a cost for messages.
func money(v float64) string { return "$" + strconv.FormatFloat(v, 'f', -1, 64) }

// ExtraKey is the session entry field that holds a spawned session's own
// limits (set at spawn, cut from its parent's).
const ExtraKey = "budget"

// FromExtra returns the limits stored in a session entry's extra fields
// (zero when none or unreadable).
func FromExtra(extra json.RawMessage) Limits {
	if len(extra) == 0 {
		return Limits{}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(extra, &m) != nil {
		return Limits{}
	}
	l, err := Parse(m[ExtraKey])
	if err != nil {
		return Limits{}
	}
	return l
}
