package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// QueueMode is what a message does when it reaches a session whose run is
// still active (the reference's messages.queue.mode).
type QueueMode string

// The queue modes.
const (
	// QueueSteer joins the active run before its next model call; when the
	// run can no longer take it, it becomes a followup.
	QueueSteer QueueMode = "steer"
	// QueueFollowup runs as its own later turn, in arrival order.
	QueueFollowup QueueMode = "followup"
	// QueueCollect joins the other collected messages in one later turn.
	QueueCollect QueueMode = "collect"
	// QueueInterrupt aborts the active run, then runs.
	QueueInterrupt QueueMode = "interrupt"
)

// QueueModes lists the modes in the reference's order.
var QueueModes = []QueueMode{QueueSteer, QueueFollowup, QueueCollect, QueueInterrupt}

// QueueDrop is what happens when a session's queue is at its cap.
type QueueDrop string

// The drop policies.
const (
	// DropSummarize drops the oldest queued messages and keeps a compact
	// summary of them that runs as a synthetic followup.
	DropSummarize QueueDrop = "summarize"
	// DropOld drops the oldest queued messages silently.
	DropOld QueueDrop = "old"
	// DropNew refuses the newest message.
	DropNew QueueDrop = "new"
)

// Queue defaults, as the reference's.
const (
	DefaultQueueMode       = QueueSteer
	DefaultQueueDebounceMs = 500
	DefaultQueueCap        = 20
	DefaultQueueDrop       = DropSummarize
)

// NormalizeQueueMode maps a mode or one of the reference's aliases
// (interrupts/abort, steering, follow-ups/followups, coalesce), trimmed
// and case-insensitive, to its mode. ok is false for anything else.
func NormalizeQueueMode(s string) (QueueMode, bool) {
	switch strings.ToLower(jsTrim(s)) {
	case "interrupt", "interrupts", "abort":
		return QueueInterrupt, true
	case "steer", "steering":
		return QueueSteer, true
	case "followup", "follow-ups", "followups":
		return QueueFollowup, true
	case "collect", "coalesce":
		return QueueCollect, true
	}
	return "", false
}

// NormalizeQueueDrop maps a drop policy or its alias (oldest, newest,
// summary) to the policy. ok is false for anything else.
func NormalizeQueueDrop(s string) (QueueDrop, bool) {
	switch strings.ToLower(jsTrim(s)) {
	case "old", "oldest":
		return DropOld, true
	case "new", "newest":
		return DropNew, true
	case "summarize", "summary":
		return DropSummarize, true
	}
	return "", false
}

// QueueSettings are the effective queue settings for one message.
type QueueSettings struct {
	// Mode is what the message does while the session is busy.
	Mode QueueMode
	// DebounceMs is the quiet window before a collected turn runs.
	DebounceMs int
	// Cap is the most queued messages per session.
	Cap int
	// Drop is what happens at the cap.
	Drop QueueDrop
}

// QueueOverride is a session's stored "/queue" override; zero fields are
// unset.
type QueueOverride struct {
	// Mode is the session's mode ("" unset).
	Mode QueueMode
	// DebounceMs is the session's quiet window (nil unset).
	DebounceMs *int
	// Cap is the session's cap (nil unset).
	Cap *int
	// Drop is the session's drop policy ("" unset).
	Drop QueueDrop
}

// QueueConfig is "messages.queue" as configured; zero fields are unset.
type QueueConfig struct {
	// Mode is messages.queue.mode as written (aliases allowed).
	Mode string
	// Cap is messages.queue.cap.
	Cap *int
	// Drop is messages.queue.drop as written.
	Drop string
	// ByChannel is messages.queue.byChannel: mode per channel.
	ByChannel map[string]string
	// DebounceMsByChannel is messages.queue.debounceMsByChannel.
	DebounceMsByChannel map[string]int
	// DebounceMs is a global quiet window (nil: the 500 ms default).
	DebounceMs *int
}

// QueueInput is what ResolveQueue decides from.
type QueueInput struct {
	// Request is the queueMode of the request itself (chat.send
	// {queueMode}), applying to that message only; "" when absent.
	Request string
	// Session is the session's stored /queue override.
	Session QueueOverride
	// Channel is the channel the message came in on.
	Channel string
	Config  QueueConfig
}

// ResolveQueue returns the effective settings for one message. The mode
// is the first of: the request's queueMode, the session's /queue override,
// messages.queue.byChannel.<channel>, messages.queue.mode, steer. Options:
// the session's override, then (for debounce) the channel's
// debounceMsByChannel, then the configured value, then the defaults. Values
// that do not normalize are skipped (config validation reports them).
func ResolveQueue(in QueueInput) QueueSettings {
	s := QueueSettings{Mode: DefaultQueueMode, DebounceMs: DefaultQueueDebounceMs, Cap: DefaultQueueCap, Drop: DefaultQueueDrop}
	mode := func() QueueMode {
		if m, ok := NormalizeQueueMode(in.Request); ok {
			return m
		}
		if in.Session.Mode != "" {
			return in.Session.Mode
		}
		if m, ok := NormalizeQueueMode(in.Config.ByChannel[strings.ToLower(in.Channel)]); ok && in.Channel != "" {
			return m
		}
		if m, ok := NormalizeQueueMode(in.Config.Mode); ok {
			return m
		}
		return DefaultQueueMode
	}
	s.Mode = mode()
	switch d, ok := in.Config.DebounceMsByChannel[strings.ToLower(in.Channel)]; {
	case in.Session.DebounceMs != nil && *in.Session.DebounceMs >= 0:
		s.DebounceMs = *in.Session.DebounceMs
	case ok && in.Channel != "" && d >= 0:
		s.DebounceMs = d
	case in.Config.DebounceMs != nil && *in.Config.DebounceMs >= 0:
		s.DebounceMs = *in.Config.DebounceMs
	}
	switch {
	case in.Session.Cap != nil && *in.Session.Cap >= 1:
		s.Cap = *in.Session.Cap
	case in.Config.Cap != nil && *in.Config.Cap >= 1:
		s.Cap = *in.Config.Cap
	}
	if in.Session.Drop != "" {
		s.Drop = in.Session.Drop
	} else if d, ok := NormalizeQueueDrop(in.Config.Drop); ok {
		s.Drop = d
	}
	return s
}

// QueueCommand is a parsed standalone "/queue" message.
type QueueCommand struct {
	// Show is true for a bare "/queue": nothing changes and the reply
	// states the current settings.
	Show bool
	// Reset clears the session's override ("default", "reset", "clear").
	Reset bool
	// Set is the override to store when !Show && !Reset && len(Errors)==0;
	// only its non-zero fields change.
	Set QueueOverride
	// Errors are the reference's messages for tokens that did not parse;
	// when any is present nothing changes.
	Errors []string
}

// ParseQueueCommand parses a message that is entirely a /queue command:
// "/queue" (or "/queue:") followed by white-space separated tokens — a mode
// or alias, "default"/"reset"/"clear", "debounce:<dur>", "cap:<n>",
// "drop:<policy>" (":" or "="). ok is false when the message is not the
// command (it then goes to the agent). Unknown tokens are reported in
// Errors with the reference's texts; Errors never contains more than one
// message per kind.
//
//	ParseQueueCommand("/queue collect debounce:0.5s cap:25") // Set{collect, 500, 25}
//	ParseQueueCommand("/queue reset")                         // Reset
//	ParseQueueCommand("/queue sideways")                      // Errors: Unrecognized queue mode "sideways"...
func ParseQueueCommand(text string) (cmd QueueCommand, ok bool) {
	s := jsTrim(text)
	if !hasPrefixFoldASCII(s, "/queue") {
		return QueueCommand{}, false
	}
	rest := s[len("/queue"):]
	if rest != "" {
		r, _ := utf8.DecodeRuneInString(rest)
		if r != ':' && !isJSSpace(r) {
			return QueueCommand{}, false // "/queuex"
		}
		if r == ':' {
			rest = rest[1:]
		}
	}
	tokens := strings.FieldsFunc(rest, isJSSpace)
	if len(tokens) == 0 {
		return QueueCommand{Show: true}, true
	}
	var badMode, badDebounce, badCap, badDrop *string
	for _, tok := range tokens {
		low := strings.ToLower(tok)
		if low == "default" || low == "reset" || low == "clear" {
			cmd.Reset = true
			break
		}
		if name, val, found := cutOption(tok); found {
			switch name {
			case "debounce":
				if ms, ok := ParseQueueDebounce(val); ok {
					cmd.Set.DebounceMs = &ms
				} else {
					badDebounce = &val
				}
				continue
			case "cap":
				if n, ok := parsePositiveInt(val); ok {
					cmd.Set.Cap = &n
				} else {
					badCap = &val
				}
				continue
			case "drop":
				if d, ok := NormalizeQueueDrop(val); ok {
					cmd.Set.Drop = d
				} else {
					badDrop = &val
				}
				continue
			}
		}
		if m, ok := NormalizeQueueMode(tok); ok {
			cmd.Set.Mode = m
			continue
		}
		if badMode == nil {
			t := tok
			badMode = &t
		}
	}
	if badMode != nil {
		cmd.Errors = append(cmd.Errors, fmt.Sprintf("Unrecognized queue mode %q. Valid modes: steer, followup, collect, interrupt.", *badMode))
	}
	if badDebounce != nil {
		cmd.Errors = append(cmd.Errors, fmt.Sprintf("Invalid debounce %q. Use ms/s/m (e.g. debounce:1500ms, debounce:2s).", *badDebounce))
	}
	if badCap != nil {
		cmd.Errors = append(cmd.Errors, fmt.Sprintf("Invalid cap %q. Use a positive integer (e.g. cap:10).", *badCap))
	}
	if badDrop != nil {
		cmd.Errors = append(cmd.Errors, fmt.Sprintf("Invalid drop policy %q. Use drop:old, drop:new, or drop:summarize.", *badDrop))
	}
	return cmd, true
}

// Reply returns the command's reply given the session's settings before
// the command (cur): the current settings for Show, the errors joined by
// spaces, "Queue mode reset to default." or "Queue mode set to <mode>." (or
// "Queue options updated." when only options changed).
func (c QueueCommand) Reply(cur QueueSettings) string {
	switch {
	case len(c.Errors) > 0:
		return strings.Join(c.Errors, " ")
	case c.Show:
		return fmt.Sprintf("Current queue settings: mode=%s, debounce=%dms, cap=%d, drop=%s.\nOptions: modes steer, followup, collect, interrupt; debounce:<ms|s|m>, cap:<n>, drop:old|new|summarize",
			cur.Mode, cur.DebounceMs, cur.Cap, cur.Drop)
	case c.Reset:
		return "Queue mode reset to default."
	case c.Set.Mode != "":
		return fmt.Sprintf("Queue mode set to %s.", c.Set.Mode)
	}
	return "Queue options updated."
}

// Apply returns the override after the command: cleared for Reset, old
// with the command's set fields for a change, old unchanged otherwise.
func (c QueueCommand) Apply(old QueueOverride) QueueOverride {
	if len(c.Errors) > 0 || c.Show {
		return old
	}
	if c.Reset {
		return QueueOverride{}
	}
	if c.Set.Mode != "" {
		old.Mode = c.Set.Mode
	}
	if c.Set.DebounceMs != nil {
		old.DebounceMs = c.Set.DebounceMs
	}
	if c.Set.Cap != nil {
		old.Cap = c.Set.Cap
	}
	if c.Set.Drop != "" {
		old.Drop = c.Set.Drop
	}
	return old
}

// cutOption splits "name:value" or "name=value" (name lower-cased).
func cutOption(tok string) (name, val string, ok bool) {
	i := strings.IndexAny(tok, ":=")
	if i < 0 {
		return "", "", false
	}
	return strings.ToLower(tok[:i]), tok[i+1:], true
}

// parsePositiveInt accepts decimal digits only, value ≥ 1.
func parsePositiveInt(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// ParseQueueDebounce parses a /queue debounce: a non-negative number with an
// optional unit ms (the default), s, m, h or d, rounded to milliseconds.
func ParseQueueDebounce(s string) (int, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, false
	}
	unit := 1.0
	num := s
	for _, u := range []struct {
		suffix string
		ms     float64
	}{{"ms", 1}, {"s", 1000}, {"m", 60_000}, {"h", 3_600_000}, {"d", 86_400_000}} {
		if strings.HasSuffix(s, u.suffix) {
			num, unit = strings.TrimSuffix(s, u.suffix), u.ms
			break
		}
	}
	if num == "" || strings.ContainsAny(num, "+-eEinxINX_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	ms := math.Round(f * unit)
	if ms > math.MaxInt32 {
		return 0, false
	}
	return int(ms), true
}

// QueueCollectTitle heads a collected turn.
const QueueCollectTitle = "[Queued messages while agent was busy]"

// CollectPrompt is the text of one collected turn, in the reference's
// format: the title, the overflow summary when there is one, then each
// message as "---\nQueued #<n>\n<text>", blocks separated by a blank line.
func CollectPrompt(summary string, texts []string) string {
	blocks := []string{QueueCollectTitle}
	if summary != "" {
		blocks = append(blocks, summary)
	}
	for i, t := range texts {
		blocks = append(blocks, strings.TrimSpace(fmt.Sprintf("---\nQueued #%d\n%s", i+1, t)))
	}
	return strings.Join(blocks, "\n\n")
}

// QueueSummaryLine is one dropped message in an overflow summary: white
// space collapsed, cut to 160 characters with "…".
func QueueSummaryLine(text string) string {
	cleaned := strings.Join(strings.Fields(text), " ")
	const limit = 160
	if utf8.RuneCountInString(cleaned) <= limit {
		return cleaned
	}
	r := []rune(cleaned)
	return strings.TrimRight(string(r[:limit-1]), " \t\n") + "…"
}

// OverflowSummary is the synthetic followup that stands for messages
// dropped at the cap under DropSummarize, in the reference's text.
func OverflowSummary(dropped int, lines []string) string {
	if dropped <= 0 {
		return ""
	}
	noun := "messages"
	if dropped == 1 {
		noun = "message"
	}
	out := []string{fmt.Sprintf("[Queue overflow] Dropped %d %s due to cap.", dropped, noun)}
	if len(lines) > 0 {
		out = append(out, "Summary:")
		for _, l := range lines {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}

// CapDecision is what ApplyQueueCap decided for a new message.
type CapDecision struct {
	// Refuse is true when the new message is refused (DropNew at the cap).
	Refuse bool
	// DropOldest is how many of the oldest queued messages to drop first.
	DropOldest int
	// Summarize is true when the dropped messages are kept as a summary.
	Summarize bool
}

// ApplyQueueCap decides what a new message does to a queue holding pending
// messages under cap (values below 1 mean no cap) and drop.
func ApplyQueueCap(pending, limit int, drop QueueDrop) CapDecision {
	if limit <= 0 || pending < limit {
		return CapDecision{}
	}
	if drop == DropNew {
		return CapDecision{Refuse: true}
	}
	return CapDecision{DropOldest: pending - limit + 1, Summarize: drop != DropOld}
}

// QueueFullError is the error of a message refused at the cap.
func QueueFullError(limit int) string {
	return fmt.Sprintf("queue full: the session already has %d queued messages (messages.queue.drop is \"new\")", limit)
}
