package anthropic

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// streamState folds Messages stream events into provider events.
type streamState struct {
	id         string
	usage      provider.Usage
	sawUsage   bool
	stopReason anthropic.StopReason
	calls      int                // tool calls emitted
	open       map[int64]*toolUse // tool_use blocks not yet stopped, by index
	stopped    bool               // message_stop seen
	pending    []*provider.Event  // events to yield, in order
}

// toolUse accumulates one streamed tool_use block.
type toolUse struct {
	id, name string
	start    any    // input from content_block_start, normally {}
	partial  []byte // input_json_delta fragments
}

// event folds one stream event into st, queueing the events it produces.
func (st *streamState) event(ev *anthropic.MessageStreamEventUnion) {
	switch ev.Type {
	case "message_start":
		st.id = ev.Message.ID
		u := &ev.Message.Usage
		st.usage = provider.Usage{
			Input:      u.InputTokens,
			Output:     u.OutputTokens,
			CacheRead:  u.CacheReadInputTokens,
			CacheWrite: u.CacheCreationInputTokens,
		}
		st.sawUsage = true
	case "content_block_start":
		b := &ev.ContentBlock
		switch b.Type {
		case "tool_use":
			if st.open == nil {
				st.open = make(map[int64]*toolUse)
			}
			st.open[ev.Index] = &toolUse{id: b.ID, name: b.Name, start: b.Input}
		case "text":
			st.text(provider.EventTextDelta, b.Text)
		case "thinking":
			st.text(provider.EventThinkingDelta, b.Thinking)
		}
	case "content_block_delta":
		d := &ev.Delta
		switch d.Type {
		case "text_delta":
			st.text(provider.EventTextDelta, d.Text)
		case "thinking_delta":
			st.text(provider.EventThinkingDelta, d.Thinking)
		case "input_json_delta":
			if tu := st.open[ev.Index]; tu != nil {
				tu.partial = append(tu.partial, d.PartialJSON...)
			}
		}
	case "content_block_stop":
		if tu := st.open[ev.Index]; tu != nil {
			delete(st.open, ev.Index)
			st.emitCall(tu)
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			st.stopReason = ev.Delta.StopReason
		}
		// message_delta usage is cumulative; input fields appear only on
		// some deployments, so keep the message_start values otherwise.
		u := &ev.Usage
		st.usage.Output = max(st.usage.Output, u.OutputTokens)
		st.usage.Input = max(st.usage.Input, u.InputTokens)
		st.usage.CacheRead = max(st.usage.CacheRead, u.CacheReadInputTokens)
		st.usage.CacheWrite = max(st.usage.CacheWrite, u.CacheCreationInputTokens)
		st.sawUsage = true
	case "message_stop":
		st.stopped = true
	}
}

func (st *streamState) text(t provider.EventType, s string) {
	if s != "" {
		st.emit(&provider.Event{Type: t, Text: s})
	}
}

func (st *streamState) emitCall(tu *toolUse) {
	args := objectArguments(tu.partial)
	if len(tu.partial) == 0 {
		if m, ok := tu.start.(map[string]any); ok && len(m) > 0 {
			if b, err := json.Marshal(m); err == nil {
				args = b
			}
		}
	}
	st.calls++
	st.emit(&provider.Event{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{ID: tu.id, Name: tu.name, Arguments: args}})
}

// finish queues tool calls whose block never stopped, the usage and
// EventDone.
func (st *streamState) finish() {
	for _, idx := range slices.Sorted(maps.Keys(st.open)) {
		st.emitCall(st.open[idx])
		delete(st.open, idx)
	}
	if st.sawUsage {
		u := st.usage
		st.emit(&provider.Event{Type: provider.EventUsage, Usage: &u})
	}
	st.emit(&provider.Event{Type: provider.EventDone, StopReason: st.mapStopReason(), ResponseID: st.id})
}

// mapStopReason maps stop_reason to the transcript's stop reasons.
func (st *streamState) mapStopReason() string {
	switch st.stopReason {
	case anthropic.StopReasonToolUse:
		return provider.StopToolUse
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return provider.StopLength
	case anthropic.StopReasonRefusal:
		return provider.StopError
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence, anthropic.StopReasonPauseTurn:
		return provider.StopEnd
	}
	if st.calls > 0 {
		return provider.StopToolUse
	}
	return provider.StopEnd
}

func (st *streamState) emit(ev *provider.Event) { st.pending = append(st.pending, ev) }

// drain yields the queued events; it reports false if the consumer stopped.
func (st *streamState) drain(yield func(*provider.Event, error) bool) bool {
	for i, ev := range st.pending {
		st.pending[i] = nil
		if !yield(ev, nil) {
			return false
		}
	}
	st.pending = st.pending[:0]
	return true
}
