package fakellm

import (
	"encoding/json"
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"net/http"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// anthropicAPI is the Messages dialect.
type anthropicAPI struct{}

// block is one content block; the fields used depend on Type.
type block struct {
	Type      string
	Text      string
	ID        string
	Name      string
	Input     []byte
	ToolUseID string
	Content   []block
	IsError   bool
}

// blocksText returns the text blocks of bs joined by "\n".
func blocksText(bs []block) string {
	var text string
	for i := range bs {
		if bs[i].Type == "text" {
			text = joinLine(text, bs[i].Text)
		}
	}
	return text
}

func (anthropicAPI) decode(body []byte, m meta) (*provider.Request, reply, error) {
	var in messagesRequest
	if err := decodeBody(body, &in); err != nil {
		return nil, nil, err
	}
	req, err := messagesRequestOf(&in, m)
	if err != nil {
		return nil, nil, err
	}
	return req, &messagesReply{n: m.n, model: req.Model, stream: in.Stream}, nil
}

// Kinds of the open content block of a messagesReply.
const (
	blockNone = iota
	blockText
	blockThinking
)

// messagesReply writes a Messages response.
type messagesReply struct {
	n      int64
	model  string
	stream bool
	index  int // index of the open block, or of the next one
	open   int // blockNone, blockText or blockThinking
}

func (a *messagesReply) streaming() bool { return a.stream }

// appendID appends the message id as a JSON string.
func (a *messagesReply) appendID(b []byte) []byte {
	b = append(b, `"msg_fake_`...)
	b = appendInt(b, a.n)
	return append(b, '"')
}

func (a *messagesReply) begin(b []byte) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	b = a.appendID(b)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = jsonenc.AppendString(b, a.model)
	return append(b, ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n"...)
}

// startBlock opens a content block; head is its content_block object.
func (a *messagesReply) startBlock(b []byte, head string) []byte {
	b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	b = appendInt(b, a.index)
	b = append(b, `,"content_block":`...)
	b = append(b, head...)
	return append(b, "}\n\n"...)
}

// stopBlock closes the block at the current index.
func (a *messagesReply) stopBlock(b []byte) []byte {
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	b = appendInt(b, a.index)
	a.index++
	a.open = blockNone
	return append(b, "}\n\n"...)
}

// openDelta appends a content_block_delta event up to the inside of its
// delta object.
func (a *messagesReply) openDelta(b []byte) []byte {
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	b = appendInt(b, a.index)
	return append(b, `,"delta":{`...)
}

// textBlock makes sure a text or thinking block (kind) is open.
func (a *messagesReply) textBlock(b []byte, kind int) []byte {
	if a.open == kind {
		return b
	}
	if a.open != blockNone {
		b = a.stopBlock(b)
	}
	a.open = kind
	if kind == blockText {
		return a.startBlock(b, `{"type":"text","text":""}`)
	}
	return a.startBlock(b, `{"type":"thinking","thinking":""}`)
}

func (a *messagesReply) event(b []byte, ev *provider.Event) []byte {
	switch ev.Type {
	case provider.EventTextDelta:
		b = a.textBlock(b, blockText)
		b = a.openDelta(b)
		b = append(b, `"type":"text_delta","text":`...)
		b = jsonenc.AppendString(b, ev.Text)
		return append(b, "}}\n\n"...)
	case provider.EventThinkingDelta:
		b = a.textBlock(b, blockThinking)
		b = a.openDelta(b)
		b = append(b, `"type":"thinking_delta","thinking":`...)
		b = jsonenc.AppendString(b, ev.Text)
		return append(b, "}}\n\n"...)
	case provider.EventToolCall:
		tc := ev.ToolCall
		if tc == nil {
			return b
		}
		if a.open != blockNone {
			b = a.stopBlock(b)
		}
		b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
		b = appendInt(b, a.index)
		b = append(b, `,"content_block":{"type":"tool_use","id":`...)
		b = jsonenc.AppendString(b, tc.ID)
		b = append(b, `,"name":`...)
		b = jsonenc.AppendString(b, tc.Name)
		b = append(b, ",\"input\":{}}}\n\n"...)
		first, second := splitArgs(string(arguments(tc.Arguments)))
		for _, frag := range [2]string{first, second} {
			if frag == "" {
				continue
			}
			b = a.openDelta(b)
			b = append(b, `"type":"input_json_delta","partial_json":`...)
			b = jsonenc.AppendString(b, frag)
			b = append(b, "}}\n\n"...)
		}
		return a.stopBlock(b)
	}
	return b
}

func (a *messagesReply) end(b []byte, stop string, u *provider.Usage) []byte {
	if a.open != blockNone {
		b = a.stopBlock(b)
	}
	b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	b = append(b, stopReason(stop)...)
	b = append(b, `","stop_sequence":null},"usage":`...)
	b = appendMessagesUsage(b, u)
	return append(b, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

func (a *messagesReply) failure(b []byte, status int, msg string) []byte {
	b = append(b, "event: error\ndata: "...)
	b = appendMessagesError(b, status, msg)
	return append(b, "\n\n"...)
}

func (a *messagesReply) complete(b []byte, t *turn) []byte {
	b = append(b, `{"id":`...)
	b = a.appendID(b)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = jsonenc.AppendString(b, a.model)
	b = append(b, `,"content":[`...)
	sep := false
	comma := func(b []byte) []byte {
		if sep {
			b = append(b, ',')
		}
		sep = true
		return b
	}
	if len(t.thinking) > 0 {
		b = comma(b)
		b = append(b, `{"type":"thinking","thinking":`...)
		b = jsonenc.AppendString(b, string(t.thinking))
		b = append(b, '}')
	}
	if len(t.text) > 0 {
		b = comma(b)
		b = append(b, `{"type":"text","text":`...)
		b = jsonenc.AppendString(b, string(t.text))
		b = append(b, '}')
	}
	for i := range t.calls {
		tc := &t.calls[i]
		b = comma(b)
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonenc.AppendString(b, tc.ID)
		b = append(b, `,"name":`...)
		b = jsonenc.AppendString(b, tc.Name)
		b = append(b, `,"input":`...)
		if args := arguments(tc.Arguments); json.Valid(args) {
			b = append(b, args...)
		} else {
			b = append(b, "{}"...)
		}
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, stopReason(t.stop)...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	b = appendMessagesUsage(b, &t.usage)
	return append(b, '}')
}

// stopReason maps a provider stop reason to stop_reason.
func stopReason(stop string) string {
	switch stop {
	case provider.StopToolUse:
		return "tool_use"
	case provider.StopLength:
		return "max_tokens"
	case provider.StopError:
		return "refusal"
	}
	return "end_turn"
}

// appendMessagesUsage appends an Anthropic usage object.
func appendMessagesUsage(b []byte, u *provider.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.Input)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = appendInt(b, u.CacheWrite)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = appendInt(b, u.CacheRead)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, u.Output)
	return append(b, '}')
}

// messagesErrorType returns the error type Anthropic uses for status.
func messagesErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// appendMessagesError appends {"type":"error","error":{"type","message"}}.
func appendMessagesError(b []byte, status int, msg string) []byte {
	b = append(b, `{"type":"error","error":{"type":"`...)
	b = append(b, messagesErrorType(status)...)
	b = append(b, `","message":`...)
	b = jsonenc.AppendString(b, msg)
	return append(b, "}}"...)
}

func (anthropicAPI) writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, appendMessagesError(make([]byte, 0, 80+len(msg)), status, msg))
}

func (anthropicAPI) authError(r *http.Request, key string) string {
	if key == "" {
		return ""
	}
	switch r.Header.Get("X-Api-Key") {
	case key:
		return ""
	case "":
		return "x-api-key header is required"
	}
	return "invalid x-api-key"
}

func (anthropicAPI) models(b []byte, id string, now time.Time) []byte {
	b = append(b, `{"data":[{"type":"model","id":`...)
	b = jsonenc.AppendString(b, id)
	b = append(b, `,"display_name":`...)
	b = jsonenc.AppendString(b, id)
	b = append(b, `,"created_at":"`...)
	b = now.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `"}],"has_more":false,"first_id":`...)
	b = jsonenc.AppendString(b, id)
	b = append(b, `,"last_id":`...)
	b = jsonenc.AppendString(b, id)
	return append(b, '}')
}
