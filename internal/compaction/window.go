package compaction

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Window limits, as the reference sets them.
const (
	// HardMinTokens is the smallest context window a run may use.
	HardMinTokens = 4000
	// WarnBelowTokens is the window under which a warning is logged.
	WarnBelowTokens = 8000
	// DefaultWindowTokens is the window of a model whose catalogue entry
	// names none.
	DefaultWindowTokens = 200_000
	// DefaultReserveTokens is the reserve kept below the window for the
	// reply, the summary and housekeeping; it is capped at a quarter of the
	// window.
	DefaultReserveTokens = 20_000
)

// Source says where a context window came from.
type Source string

// Window sources.
const (
	SourceModelsConfig Source = "modelsConfig"
	SourceDefault      Source = "default"
)

// Window is a model's effective context window.
type Window struct {
	Tokens int
	Source Source
}

// ResolveWindow returns the effective window of a model: contextTokens when
// set, else contextWindow, else DefaultWindowTokens. Values <= 0 count as
// unset.
func ResolveWindow(contextTokens, contextWindow int) Window {
	switch {
	case contextTokens > 0:
		return Window{Tokens: contextTokens, Source: SourceModelsConfig}
	case contextWindow > 0:
		return Window{Tokens: contextWindow, Source: SourceModelsConfig}
	}
	return Window{Tokens: DefaultWindowTokens, Source: SourceDefault}
}

// Blocked returns the reference's refusal text when the window is below
// HardMinTokens, else "".
func (w Window) Blocked() string {
	if w.Tokens >= HardMinTokens {
		return ""
	}
	return fmt.Sprintf("Model context window too small (%d tokens; source=%s). Minimum is %d.", w.Tokens, w.Source, HardMinTokens)
}

// Warning returns the reference's low-window warning for model ref
// ("provider/model") when the window is below WarnBelowTokens, else "".
func (w Window) Warning(ref string) string {
	if w.Tokens >= WarnBelowTokens {
		return ""
	}
	return fmt.Sprintf("low context window: %s ctx=%d (warn<%d) source=%s", ref, w.Tokens, WarnBelowTokens, w.Source)
}

// Reserve returns the tokens kept free below the window: reserve (or
// DefaultReserveTokens when <= 0), capped at a quarter of the window.
func Reserve(window, reserve int) int {
	if reserve <= 0 {
		reserve = DefaultReserveTokens
	}
	return min(reserve, window/4)
}

// Threshold returns the projected prompt size at which a turn compacts
// first: the window minus its reserve.
func Threshold(window, reserve int) int { return window - Reserve(window, reserve) }

// FormatTokens formats a token count as the reference does: "950",
// "12.3k", "67k", "1.2m".
func FormatTokens(n int) string {
	v := float64(max(n, 0))
	switch {
	case v < 1000:
		return strconv.Itoa(int(math.Round(v)))
	case v < 1e6:
		prec := 1
		if v >= 1e4 {
			prec = 0
		}
		k := strconv.FormatFloat(v/1e3, 'f', prec, 64)
		if f, _ := strconv.ParseFloat(k, 64); f < 1000 {
			return k + "k"
		}
	}
	return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "m"
}

// NothingToCompact opens the reason of a compaction that found nothing to
// summarise ("nothing to compact: <why>").
const NothingToCompact = "nothing to compact"

// ContextLine is the reference's short context usage, "Context 3.1k/100k
// (3%)".
func ContextLine(used, window int) string {
	if window <= 0 {
		return "Context " + FormatTokens(used) + "/?"
	}
	pct := min(999, int(math.Round(float64(used)/float64(window)*100)))
	return fmt.Sprintf("Context %s/%s (%d%%)", FormatTokens(used), FormatTokens(window), pct)
}

// CompactedReply is the /compact answer: "⚙️ Compacted (12k → 3.1k) •
// Context 3.1k/100k (3%)", or, when nothing was compacted, "⚙️ Compaction
// skipped: <why> • …" with why the reason the compaction gave (its
// "nothing to compact: " opening left out).
func CompactedReply(compacted bool, reason string, before, after, window int) string {
	if !compacted {
		why := strings.TrimSpace(reason)
		if rest, ok := strings.CutPrefix(why, NothingToCompact); ok {
			why = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
		}
		if why == "" {
			return "⚙️ Compaction skipped • " + ContextLine(before, window)
		}
		return "⚙️ Compaction skipped: " + why + " • " + ContextLine(before, window)
	}
	return fmt.Sprintf("⚙️ Compacted (%s → %s) • %s", FormatTokens(before), FormatTokens(after), ContextLine(after, window))
}
