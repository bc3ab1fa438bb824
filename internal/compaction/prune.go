package compaction

import "github.com/switchboardhq/switchboard/internal/provider"

// Pruning thresholds, as the reference builds them in.
const (
	pruneMinRatio       = 0.3  // below this share of the window nothing is pruned
	hardClearRatio      = 0.5  // at or above this share, hard-clear
	softTrimChars       = 4000 // results longer than this are soft-trimmed
	softTrimKeep        = 1500 // characters kept at each end
	hardClearMinChars   = 50000
	protectedAssistants = 3 // the last three assistant turns are never pruned
)

// DefaultClearedPlaceholder replaces a hard-cleared tool result.
const DefaultClearedPlaceholder = "[Old tool result content cleared]"

// PruneOptions configure Prune.
type PruneOptions struct {
	// Window is the model's context window in tokens; Tokens estimates
	// the prompt of msgs.
	Window int
	Tokens func(msgs []provider.Message) int
	// Allow and Deny scope prunable tools by name (empty Allow: all).
	Allow, Deny []string
	// HardClear enables the hard clear; Placeholder replaces cleared
	// content ("" = DefaultClearedPlaceholder).
	HardClear   bool
	Placeholder string
}

// PruneStats says what Prune changed.
type PruneStats struct {
	Trimmed, Cleared int
}

// Prune trims old tool results in a request's messages (never in the
// transcript): when the prompt uses at least 30% of the window, results
// over 4,000 characters keep their first and last 1,500 characters; if it
// still uses at least 50% and 50,000 or more characters of prunable
// results remain, they are replaced by the placeholder. Results before
// the first user message and from the third-last assistant message on are
// never touched. msgs is not modified; the result shares unchanged
// messages with it.
func Prune(msgs []provider.Message, o PruneOptions) ([]provider.Message, PruneStats) {
	var st PruneStats
	if o.Window <= 0 || o.Tokens == nil || float64(o.Tokens(msgs)) < pruneMinRatio*float64(o.Window) {
		return msgs, st
	}
	first, protectFrom := -1, len(msgs)
	seen := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == provider.RoleAssistant {
			if seen++; seen == protectedAssistants {
				protectFrom = i
				break
			}
		}
	}
	for i := range msgs {
		if msgs[i].Role == provider.RoleUser {
			first = i
			break
		}
	}
	if first < 0 {
		return msgs, st
	}
	prunable := func(i int) bool {
		m := &msgs[i]
		return i > first && i < protectFrom && m.Role == provider.RoleTool && toolAllowed(m.ToolName, o.Allow, o.Deny)
	}
	out := msgs
	clone := func() {
		if &out[0] == &msgs[0] {
			out = append([]provider.Message(nil), msgs...)
		}
	}
	for i := range msgs {
		if !prunable(i) {
			continue
		}
		r := []rune(msgs[i].Text)
		if len(r) <= softTrimChars {
			continue
		}
		clone()
		out[i].Text = string(r[:softTrimKeep]) + "\n...\n" + string(r[len(r)-softTrimKeep:])
		st.Trimmed++
	}
	if !o.HardClear || float64(o.Tokens(out)) < hardClearRatio*float64(o.Window) {
		return out, st
	}
	chars := 0
	for i := range out {
		if prunable(i) {
			chars += len(out[i].Text)
		}
	}
	if chars < hardClearMinChars {
		return out, st
	}
	ph := o.Placeholder
	if ph == "" {
		ph = DefaultClearedPlaceholder
	}
	for i := range out {
		if prunable(i) && out[i].Text != ph {
			clone()
			out[i].Text = ph
			st.Cleared++
		}
	}
	return out, st
}

func toolAllowed(name string, allow, deny []string) bool {
	for _, d := range deny {
		if d == name || d == "*" {
			return false
		}
	}
	if len(allow) == 0 {
		return true
	}
	for _, a := range allow {
		if a == name || a == "*" {
			return true
		}
	}
	return false
}
