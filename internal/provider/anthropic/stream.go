package anthropic

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// streamEvent is one event of a Messages stream, with the fields used of
// every type (message_start, content_block_start/delta/stop,
// message_delta, message_stop; ping and unknown types are ignored).
type streamEvent struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		ID    string `json:"id"`
		Usage usage  `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type     string          `json:"type"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Input    json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage usage `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// streamState folds Messages stream events into provider events.
type streamState struct {
	id         string
	usage      provider.Usage
	sawUsage   bool
	stopReason string
	calls      int                // tool calls emitted
	open       map[int64]*toolUse // tool_use blocks not yet stopped, by index
	stopped    bool               // message_stop seen
	pending    []*provider.Event  // events to yield, in order
}

// toolUse accumulates one streamed tool_use block.
type toolUse struct {
	id, name string
	start    json.RawMessage // input from content_block_start, normally {}
	partial  []byte          // input_json_delta fragments
}

// event folds one stream event into st, queueing the events it produces.
func (st *streamState) event(ev *streamEvent) {
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
		var m map[string]any
		if json.Unmarshal(tu.start, &m) == nil && len(m) > 0 {
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
	case "tool_use":
		return provider.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return provider.StopLength
	case "refusal":
		return provider.StopError
	case "end_turn", "stop_sequence", "pause_turn":
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
