package openai

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// chatChunk is one chat.completion.chunk, with the fields the stream uses.
// Error is set when the server reports a failure inside the stream.
type chatChunk struct {
	ID      string           `json:"id"`
	Choices []chunkChoice    `json:"choices"`
	Usage   *completionUsage `json:"usage"`
	Error   json.RawMessage  `json:"error"`
}

type chunkChoice struct {
	Index        int64      `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// ReasoningContent and Reasoning are the non-standard reasoning
	// fields (see reasoningFields), kept raw: a server may send null.
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ToolCalls        []chunkToolCall `json:"tool_calls"`
}

type chunkToolCall struct {
	Index    int64        `json:"index"`
	ID       string       `json:"id"`
	Function functionCall `json:"function"`
}

type completionUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// reasoningFields: the non-standard delta fields that carry reasoning
// text, in order of preference: vLLM, DeepSeek and llama.cpp send
// reasoning_content; Ollama, OpenRouter and newer vLLM send reasoning. Only
// the first present one is used, since some servers send both.

// streamState folds chat.completion.chunk objects into provider events.
type streamState struct {
	chunks       int // chunks received
	id           string
	calls        []*toolCall         // in arrival order
	byIndex      map[int64]*toolCall // the call currently open at each index
	finishReason string              // finish_reason of choice 0
	usage        *provider.Usage     // last usage seen
	pending      []*provider.Event   // events to yield, in order
}

// toolCall accumulates the fragments of one streamed tool call.
type toolCall struct {
	id, name string
	args     []byte
	sent     bool // emitted as an event
}

// chunk folds one chunk into st, queueing the events it produces.
func (st *streamState) chunk(c *chatChunk) {
	st.chunks++
	if st.id == "" {
		st.id = c.ID
	}
	if c.Usage != nil {
		st.usage = usageOf(c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n is never set, so only choice 0 exists
		}
		d := &ch.Delta
		if text := reasoningOf(d); text != "" {
			st.emit(&provider.Event{Type: provider.EventThinkingDelta, Text: text})
		}
		if d.Content != "" {
			st.emit(&provider.Event{Type: provider.EventTextDelta, Text: d.Content})
		}
		if d.Refusal != "" {
			st.emit(&provider.Event{Type: provider.EventTextDelta, Text: d.Refusal})
		}
		for j := range d.ToolCalls {
			st.fragment(&d.ToolCalls[j])
		}
		if ch.FinishReason != "" {
			st.finishReason = ch.FinishReason
			st.flushCalls()
		}
	}
}

// fragment adds one delta.tool_calls entry. A fragment with a new id at an
// index already in use starts a new call (some servers reuse index 0).
func (st *streamState) fragment(f *chunkToolCall) {
	tc := st.byIndex[f.Index]
	if tc == nil || tc.sent || (f.ID != "" && tc.id != "" && f.ID != tc.id) {
		tc = &toolCall{}
		st.calls = append(st.calls, tc)
		if st.byIndex == nil {
			st.byIndex = make(map[int64]*toolCall)
		}
		st.byIndex[f.Index] = tc
	}
	if tc.id == "" {
		tc.id = f.ID
	}
	if tc.name == "" {
		tc.name = f.Function.Name
	}
	tc.args = append(tc.args, f.Function.Arguments...)
}

// flushCalls queues every accumulated tool call not queued before.
func (st *streamState) flushCalls() {
	for i, tc := range st.calls {
		if tc.sent {
			continue
		}
		tc.sent = true
		id := tc.id
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		st.emit(&provider.Event{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{
			ID:        id,
			Name:      tc.name,
			Arguments: objectArguments(tc.args),
		}})
	}
}

// finish queues the tool calls not yet emitted, the usage and EventDone.
func (st *streamState) finish() {
	st.flushCalls()
	if st.usage != nil {
		st.emit(&provider.Event{Type: provider.EventUsage, Usage: st.usage})
	}
	st.emit(&provider.Event{Type: provider.EventDone, StopReason: st.stopReason(), ResponseID: st.id})
}

// stopReason maps finish_reason. Servers that report "stop" (or nothing)
// after tool calls, as some local servers do, still yield StopToolUse.
func (st *streamState) stopReason() string {
	switch st.finishReason {
	case "length":
		return provider.StopLength
	case "tool_calls", "function_call":
		return provider.StopToolUse
	case "content_filter":
		return provider.StopError
	}
	if len(st.calls) > 0 {
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

// reasoningOf returns the reasoning text of a delta, if the server sent any.
func reasoningOf(d *chunkDelta) string {
	for _, raw := range [...]json.RawMessage{d.ReasoningContent, d.Reasoning} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// usageOf maps OpenAI usage: prompt_tokens includes cached (and, where
// reported, cache-written) tokens, which are split out.
func usageOf(u *completionUsage) *provider.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	written := u.PromptTokensDetails.CacheWriteTokens
	return &provider.Usage{
		Input:      max(u.PromptTokens-cached-written, 0),
		Output:     u.CompletionTokens,
		CacheRead:  cached,
		CacheWrite: written,
	}
}

// objectArguments returns streamed arguments as a JSON object: {} when
// empty or null, the text itself when it is an object, else
// {"_raw": text}.
func objectArguments(args []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}")
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return json.RawMessage(bytes.Clone(trimmed))
	}
	raw, _ := json.Marshal(map[string]string{"_raw": string(args)})
	return raw
}
