package scripted

import (
	"context"
	"iter"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// Names of the offline model.
const (
	// ProviderName is the provider id of the scripted model and the default
	// Options.Name.
	ProviderName = "scripted"
	// ModelID is the model id of the scripted model. Any model id is accepted
	// in requests; this is the one to record.
	ModelID = "echo-1"
	// Model is the model reference ("<provider>/<model>") the daemon uses when
	// no provider is configured.
	Model = ProviderName + "/" + ModelID
)

// MaxSleep caps the total /sleep duration of one step.
const MaxSleep = 10 * time.Minute

// Options configure a Provider. The zero value is ready to use.
type Options struct {
	// Name is reported as provider.Error.Provider and prefixes response ids.
	// Empty means ProviderName.
	Name string
	// Delay is waited before every text delta, thinking delta and tool call
	// event, to simulate a slow stream. Zero or negative means no delay.
	Delay time.Duration
}

// Provider is the scripted model. It is safe for concurrent use. Its
// answers depend on nothing but the request and the Options: the only
// state it keeps between calls is a bounded memo of digests that spares
// hashing again what a request repeats of recent ones for its response id.
type Provider struct {
	name  string
	delay time.Duration
	ids   idMemo
}

var _ provider.Provider = (*Provider)(nil)

// New returns a scripted model configured by opts.
func New(opts Options) *Provider {
	p := &Provider{name: opts.Name, delay: max(opts.Delay, 0)}
	if p.name == "" {
		p.name = ProviderName
	}
	return p
}

// Stream answers req by the rules of the package documentation. The events
// are computed when the sequence is first ranged over.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if req == nil {
			yield(nil, p.errorf(400, "nil request"))
			return
		}
		st, err := p.plan(req)
		if err != nil {
			yield(nil, err)
			return
		}
		if st.sleep > 0 {
			if err := wait(ctx, st.sleep); err != nil {
				yield(nil, err)
				return
			}
		}
		for i := range st.events {
			ev := &st.events[i]
			if p.delay > 0 && ev.Type != provider.EventUsage && ev.Type != provider.EventDone {
				if err := wait(ctx, p.delay); err != nil {
					yield(nil, err)
					return
				}
			}
			if !yield(ev, nil) {
				return
			}
		}
		switch {
		case st.stall:
			<-ctx.Done()
			yield(nil, ctx.Err())
		case st.err != nil:
			yield(nil, st.err)
		}
	}
}

// planned is one step, ready to stream: an optional initial wait, the events,
// then optionally a stall or an error instead of the end of the stream.
type planned struct {
	sleep  time.Duration
	events []provider.Event
	stall  bool
	err    *provider.Error
}

// plan computes the step that answers req.
func (p *Provider) plan(req *provider.Request) (planned, error) {
	if IsSummaryRequest(req) {
		return p.summaryStep(req), nil
	}
	trig, step := trigger(req.Messages)
	afterTools := len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == provider.RoleTool

	sc, err := p.parse(trig, req.System, step)
	if err != nil {
		return planned{}, err
	}

	// The reply is prefix+body, kept apart so that the echo needs no
	// concatenation; the prefix always ends in whitespace (or is empty).
	var prefix, body string
	switch {
	case sc.hasReply:
		body = sc.reply
	case len(sc.calls) > 0 || sc.stall || sc.err != nil:
	case afterTools && sc.hasThen:
		body = sc.then
	case afterTools:
		body = summarize(req.Messages)
	default:
		prefix, body = "echo: ", sc.plain
		if body == "" {
			body = "(empty)"
		}
	}

	terminal := sc.stall || sc.err != nil
	calls := sc.calls
	if terminal {
		calls = nil
	}
	stop := provider.StopEnd
	if limit := req.MaxTokens * 4; req.MaxTokens > 0 && len(prefix)+len(body) > limit {
		body = cut(prefix+body, limit)
		prefix = ""
		calls = nil
		stop = provider.StopLength
	}
	if len(calls) > 0 {
		stop = provider.StopToolUse
		n := countCalls(req.Messages)
		for i := range calls {
			n++
			calls[i].ID = "call_" + strconv.Itoa(n)
		}
	}

	size := countDeltas(sc.think) + countDeltas(prefix) + countDeltas(body) + len(calls)
	if !terminal {
		size += 2
	}
	st := planned{sleep: sc.sleep, stall: sc.stall, err: sc.err, events: make([]provider.Event, 0, size)}
	st.events = appendDeltas(st.events, provider.EventThinkingDelta, sc.think)
	st.events = appendDeltas(st.events, provider.EventTextDelta, prefix)
	st.events = appendDeltas(st.events, provider.EventTextDelta, body)
	out := len(sc.think) + len(prefix) + len(body)
	for i := range calls {
		st.events = append(st.events, provider.Event{Type: provider.EventToolCall, ToolCall: &calls[i]})
		out += len(calls[i].Name) + len(calls[i].Arguments)
	}
	if terminal {
		return st, nil
	}
	usage := sc.usage
	if usage == nil {
		usage = &provider.Usage{Input: estimate(inputSize(req)), Output: estimate(out)}
	}
	st.events = append(st.events,
		provider.Event{Type: provider.EventUsage, Usage: usage},
		provider.Event{Type: provider.EventDone, StopReason: stop, ResponseID: p.responseID(req)},
	)
	return st, nil
}

// summaryStep answers a compaction summariser call with Summary: no
// directive of the summarised conversation is obeyed.
func (p *Provider) summaryStep(req *provider.Request) planned {
	body := Summary(req)
	stop := provider.StopEnd
	if limit := req.MaxTokens * 4; req.MaxTokens > 0 && len(body) > limit {
		body, stop = cut(body, limit), provider.StopLength
	}
	st := planned{events: make([]provider.Event, 0, countDeltas(body)+2)}
	st.events = appendDeltas(st.events, provider.EventTextDelta, body)
	st.events = append(st.events,
		provider.Event{Type: provider.EventUsage, Usage: &provider.Usage{Input: estimate(inputSize(req)), Output: estimate(len(body))}},
		provider.Event{Type: provider.EventDone, StopReason: stop, ResponseID: p.responseID(req)},
	)
	return st
}

// trigger returns the text of the last user message and the step number:
// 1 plus the number of assistant messages after it.
func trigger(msgs []provider.Message) (text string, step int) {
	step = 1
	for i := len(msgs) - 1; i >= 0; i-- {
		switch msgs[i].Role {
		case provider.RoleUser:
			return msgs[i].Text, step
		case provider.RoleAssistant:
			step++
		}
	}
	return "", step
}

// countCalls returns the number of tool calls in the assistant messages.
func countCalls(msgs []provider.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Role == provider.RoleAssistant {
			n += len(msgs[i].ToolCalls)
		}
	}
	return n
}

// summarize returns one line per tool result at the end of msgs.
func summarize(msgs []provider.Message) string {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == provider.RoleTool {
		i--
	}
	var b []byte
	for j, m := range msgs[i:] {
		if j > 0 {
			b = append(b, '\n')
		}
		name := m.ToolName
		if name == "" {
			name = callName(msgs[:i], m.ToolCallID)
		}
		b = append(b, "tool "...)
		b = append(b, name...)
		if m.IsError {
			b = append(b, " failed: "...)
		} else {
			b = append(b, " returned: "...)
		}
		b = appendExcerpt(b, m.Text)
	}
	return string(b)
}

// callName finds the name of the tool call id in the assistant messages of
// msgs, for tool results that do not carry it.
func callName(msgs []provider.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return "unknown"
}

// excerptRunes is the length of a tool result excerpt in a summary.
const excerptRunes = 200

// appendExcerpt appends s with whitespace runs collapsed to one space,
// trimmed and cut to excerptRunes runes ("…" marks a cut; "(empty)" stands
// for nothing).
func appendExcerpt(b []byte, s string) []byte {
	start, n, space := len(b), 0, false
	for _, r := range s {
		if isSpace(r) {
			space = true
			continue
		}
		if space && len(b) > start {
			if n == excerptRunes {
				return append(b, "…"...)
			}
			b = append(b, ' ')
			n++
		}
		space = false
		if n == excerptRunes {
			return append(b, "…"...)
		}
		b = utf8.AppendRune(b, r)
		n++
	}
	if len(b) == start {
		b = append(b, "(empty)"...)
	}
	return b
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x85, 0xA0, 0x2028, 0x2029, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// cut returns s cut to at most n bytes, at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isASCIISpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// countDeltas returns the number of deltas appendDeltas makes of s.
func countDeltas(s string) int {
	n := 0
	for i := 0; i < len(s); {
		i = nextDelta(s, i)
		n++
	}
	return n
}

// nextDelta returns the end of the delta that starts at i: leading
// whitespace, a word, and the whitespace after it.
func nextDelta(s string, i int) int {
	for i < len(s) && isASCIISpace(s[i]) {
		i++
	}
	for i < len(s) && !isASCIISpace(s[i]) {
		i++
	}
	for i < len(s) && isASCIISpace(s[i]) {
		i++
	}
	return i
}

// appendDeltas appends s to evs as word-sized deltas of type t.
func appendDeltas(evs []provider.Event, t provider.EventType, s string) []provider.Event {
	for i := 0; i < len(s); {
		j := nextDelta(s, i)
		evs = append(evs, provider.Event{Type: t, Text: s[i:j]})
		i = j
	}
	return evs
}

// estimate turns a byte count into a token count: n/4, at least 1.
func estimate(n int) int64 { return max(int64(n/4), 1) }

// inputSize returns the byte length of the text the model reads.
func inputSize(req *provider.Request) int {
	n := len(req.System)
	for i := range req.Messages {
		m := &req.Messages[i]
		n += len(m.Text)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return n
}

// wait sleeps for d or until ctx is done, returning ctx.Err() then.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Provider) errorf(status int, msg string) *provider.Error {
	return &provider.Error{Provider: p.name, StatusCode: status, Message: msg}
}
