package gateway

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// The encoders below give the bytes json.Marshal gives the same values,
// without its reflection and its second pass over a json.Marshaler's
// output (compaction and HTML escaping): every run's end and every
// assistant event goes through them. Anything they cannot write as
// json.Marshal would (text with <, > or &, fields of raw JSON) takes
// json.Marshal.

// appendAgentText appends agentTextData{Text: text, Delta: delta} to b
// as json.Marshal writes it.
func appendAgentText(b []byte, text, delta string) []byte {
	if strings.ContainsAny(text, "<>&") || strings.ContainsAny(delta, "<>&") {
		raw, _ := json.Marshal(agentTextData{Text: text, Delta: delta})
		return append(b, raw...)
	}
	b = append(b, `{"text":`...)
	b = jsonenc.AppendString(b, text)
	b = append(b, `,"delta":`...)
	b = jsonenc.AppendString(b, delta)
	return append(b, '}')
}

// appendMessageJSON appends json.Marshal(m) to b; on an error it returns
// b as it was. The transcript codec writes a message compact, with each
// string as jsonenc writes it; json.Marshal then only escapes <, > and &,
// and compacts raw JSON the message carries. So a message without raw
// JSON members whose encoding has none of <, > and & is its codec's bytes
// as they are.
func appendMessageJSON(b []byte, m *transcript.Message) ([]byte, error) {
	start := len(b)
	if plainMessage(m) {
		out, err := m.AppendJSON(slices.Grow(b, messageSize(m)))
		if err != nil {
			return b[:start], err
		}
		if !bytes.ContainsAny(out[start:], "<>&") {
			return out, nil
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return b[:start], err
	}
	return append(b[:start], raw...), nil
}

// plainMessage reports whether m carries no member the codec writes from
// raw JSON (Extra, Details, a tool call's Arguments, Meta's Extra) and no
// cost (floats).
func plainMessage(m *transcript.Message) bool {
	if len(m.Extra) > 0 || len(m.Details) > 0 || (m.Meta != nil && len(m.Meta.Extra) > 0) ||
		(m.Usage != nil && m.Usage.Cost != nil) {
		return false
	}
	for i := range m.Content.Blocks {
		if b := &m.Content.Blocks[i]; len(b.Extra) > 0 || len(b.Arguments) > 0 {
			return false
		}
	}
	return true
}

// appendUsageJSON appends json.Marshal(u) to b.
func appendUsageJSON(b []byte, u transcript.Usage) []byte {
	if u.Cost != nil {
		raw, _ := json.Marshal(u)
		return append(b, raw...)
	}
	b = append(b, `{"input":`...)
	b = strconv.AppendInt(b, u.Input, 10)
	b = append(b, `,"output":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	b = append(b, `,"cacheRead":`...)
	b = strconv.AppendInt(b, u.CacheRead, 10)
	b = append(b, `,"cacheWrite":`...)
	b = strconv.AppendInt(b, u.CacheWrite, 10)
	b = append(b, `,"totalTokens":`...)
	b = strconv.AppendInt(b, u.TotalTokens, 10)
	return append(b, '}')
}

// messageSize is about how many bytes m's JSON takes: its text and
// strings, and room for the keys and numbers.
func messageSize(m *transcript.Message) int {
	n := 320 + len(m.Provider) + len(m.Model) + len(m.API) + len(m.StopReason) + len(m.ErrorMessage) + len(m.ResponseID)
	if m.Content.String != nil {
		n += len(*m.Content.String)
	}
	for i := range m.Content.Blocks {
		b := &m.Content.Blocks[i]
		n += 48 + len(b.ID) + len(b.Name) + len(b.ThinkingSignature) + len(b.Data)
		if b.Text != nil {
			n += len(*b.Text)
		}
		if b.Thinking != nil {
			n += len(*b.Thinking)
		}
	}
	return n
}

// appendUsageData appends usageData(u) to b as json.Marshal writes the
// map (keys sorted).
func appendUsageData(b []byte, u *transcript.Usage) []byte {
	b = append(b, '{')
	if u.CacheRead != 0 {
		b = append(b, `"cacheReadTokens":`...)
		b = append(strconv.AppendInt(b, u.CacheRead, 10), ',')
	}
	if u.CacheWrite != 0 {
		b = append(b, `"cacheWriteTokens":`...)
		b = append(strconv.AppendInt(b, u.CacheWrite, 10), ',')
	}
	b = append(b, `"inputTokens":`...)
	b = strconv.AppendInt(b, u.Input, 10)
	b = append(b, `,"outputTokens":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	b = append(b, `,"totalTokens":`...)
	b = strconv.AppendInt(b, u.TotalTokens, 10)
	return append(b, '}')
}
