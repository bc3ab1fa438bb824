package fakellm

import (
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"net/http"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// openAI is the Chat Completions dialect.
type openAI struct{}

func (openAI) decode(body []byte, m meta) (*provider.Request, reply, error) {
	var in chatRequest
	if err := decodeBody(body, &in); err != nil {
		return nil, nil, err
	}
	req, err := chatRequestOf(&in, m)
	if err != nil {
		return nil, nil, err
	}
	rep := &chatReply{n: m.n, created: m.created, model: req.Model, stream: in.Stream}
	if in.StreamOptions != nil {
		rep.includeUsage = in.StreamOptions.IncludeUsage
	}
	if rep.stream {
		rep.prefix = rep.appendHead(make([]byte, 0, 96+len(req.Model)), "chat.completion.chunk")
		rep.prefix = append(rep.prefix, `,"choices":[`...)
	}
	return req, rep, nil
}

// chatReply writes a Chat Completions response.
type chatReply struct {
	n            int64
	created      int64
	model        string
	stream       bool
	includeUsage bool
	prefix       []byte // every chunk's JSON up to and including "choices":[
	calls        int    // tool calls streamed so far
}

// appendHead appends `{"id":...,"object":...,"created":...,"model":...`.
func (c *chatReply) appendHead(b []byte, object string) []byte {
	b = append(b, `{"id":"chatcmpl-fake-`...)
	b = appendInt(b, c.n)
	b = append(b, `","object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = appendInt(b, c.created)
	b = append(b, `,"model":`...)
	return jsonenc.AppendString(b, c.model)
}

func (c *chatReply) streaming() bool { return c.stream }

// openDelta appends a chunk up to the inside of its delta object.
func (c *chatReply) openDelta(b []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, c.prefix...)
	return append(b, `{"index":0,"delta":{`...)
}

// closeDelta closes a chunk opened by openDelta.
func closeDelta(b []byte) []byte {
	return append(b, "},\"finish_reason\":null}]}\n\n"...)
}

func (c *chatReply) begin(b []byte) []byte {
	b = c.openDelta(b)
	b = append(b, `"role":"assistant","content":""`...)
	return closeDelta(b)
}

func (c *chatReply) event(b []byte, ev *provider.Event) []byte {
	switch ev.Type {
	case provider.EventTextDelta:
		b = c.openDelta(b)
		b = append(b, `"content":`...)
		b = jsonenc.AppendString(b, ev.Text)
		return closeDelta(b)
	case provider.EventThinkingDelta:
		b = c.openDelta(b)
		b = append(b, `"reasoning_content":`...)
		b = jsonenc.AppendString(b, ev.Text)
		return closeDelta(b)
	case provider.EventToolCall:
		tc := ev.ToolCall
		if tc == nil {
			return b
		}
		b = c.openDelta(b)
		b = append(b, `"tool_calls":[{"index":`...)
		b = appendInt(b, c.calls)
		b = append(b, `,"id":`...)
		b = jsonenc.AppendString(b, tc.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = jsonenc.AppendString(b, tc.Name)
		b = append(b, `,"arguments":""}}]`...)
		b = closeDelta(b)
		first, second := splitArgs(string(arguments(tc.Arguments)))
		for _, frag := range [2]string{first, second} {
			if frag == "" {
				continue
			}
			b = c.openDelta(b)
			b = append(b, `"tool_calls":[{"index":`...)
			b = appendInt(b, c.calls)
			b = append(b, `,"function":{"arguments":`...)
			b = jsonenc.AppendString(b, frag)
			b = append(b, `}}]`...)
			b = closeDelta(b)
		}
		c.calls++
	}
	return b
}

func (c *chatReply) end(b []byte, stop string, u *provider.Usage) []byte {
	b = append(b, "data: "...)
	b = append(b, c.prefix...)
	b = append(b, `{"index":0,"delta":{},"finish_reason":"`...)
	b = append(b, finishReason(stop)...)
	b = append(b, "\"}]}\n\n"...)
	if c.includeUsage {
		b = append(b, "data: "...)
		b = append(b, c.prefix...)
		b = append(b, `],"usage":`...)
		b = appendChatUsage(b, u)
		b = append(b, "}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

func (c *chatReply) failure(b []byte, status int, msg string) []byte {
	typ, _ := chatErrorKind(status)
	b = append(b, `data: {"error":{"message":`...)
	b = jsonenc.AppendString(b, msg)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","param":null,"code":`...)
	b = appendInt(b, status)
	return append(b, "}}\n\n"...)
}

func (c *chatReply) complete(b []byte, t *turn) []byte {
	b = c.appendHead(b, "chat.completion")
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if len(t.text) == 0 && len(t.calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = jsonenc.AppendString(b, string(t.text))
	}
	if len(t.thinking) > 0 {
		b = append(b, `,"reasoning_content":`...)
		b = jsonenc.AppendString(b, string(t.thinking))
	}
	if len(t.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range t.calls {
			tc := &t.calls[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsonenc.AppendString(b, tc.ID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonenc.AppendString(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = jsonenc.AppendString(b, string(arguments(tc.Arguments)))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":"`...)
	b = append(b, finishReason(t.stop)...)
	b = append(b, `"}],"usage":`...)
	b = appendChatUsage(b, &t.usage)
	return append(b, '}')
}

// finishReason maps a provider stop reason to finish_reason.
func finishReason(stop string) string {
	switch stop {
	case provider.StopToolUse:
		return "tool_calls"
	case provider.StopLength:
		return "length"
	case provider.StopError:
		return "content_filter"
	}
	return "stop"
}

// appendChatUsage appends an OpenAI usage object; prompt_tokens includes
// the cached tokens.
func appendChatUsage(b []byte, u *provider.Usage) []byte {
	prompt := u.Input + u.CacheRead + u.CacheWrite
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, prompt)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, u.Output)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, prompt+u.Output)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, u.CacheRead)
	if u.CacheWrite > 0 {
		b = append(b, `,"cache_write_tokens":`...)
		b = appendInt(b, u.CacheWrite)
	}
	return append(b, "}}"...)
}

// chatErrorKind returns the error type and code OpenAI uses for status;
// an empty code is null.
func chatErrorKind(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusNotFound:
		return "invalid_request_error", "not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

func (openAI) writeError(w http.ResponseWriter, status int, msg string) {
	typ, code := chatErrorKind(status)
	b := make([]byte, 0, 96+len(msg))
	b = append(b, `{"error":{"message":`...)
	b = jsonenc.AppendString(b, msg)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","param":null,"code":`...)
	if code == "" {
		b = append(b, "null"...)
	} else {
		b = jsonenc.AppendString(b, code)
	}
	b = append(b, "}}\n"...)
	writeJSON(w, status, b)
}

func (openAI) authError(r *http.Request, key string) string {
	if key == "" {
		return ""
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
	}
	const bearer = "Bearer "
	if len(h) > len(bearer) && strings.EqualFold(h[:len(bearer)], bearer) && h[len(bearer):] == key {
		return ""
	}
	return "Incorrect API key provided."
}

func (openAI) models(b []byte, id string, now time.Time) []byte {
	b = append(b, `{"object":"list","data":[{"id":`...)
	b = jsonenc.AppendString(b, id)
	b = append(b, `,"object":"model","created":`...)
	b = appendInt(b, now.Unix())
	return append(b, `,"owned_by":"fakellm"}]}`...)
}
