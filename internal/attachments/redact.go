package attachments

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// RedactedContent replaces attachment contents in persisted tool calls.
const RedactedContent = "__OPENCLAW_REDACTED__"

// SpawnToolName is the tool whose persisted calls carry attachments.
const SpawnToolName = "sessions_spawn"

// IsSpawnToolCall reports whether a tool-call block's name is
// sessions_spawn, trimmed and case-insensitively, as the reference matches
// the blocks whose arguments it redacts.
func IsSpawnToolCall(name string) bool {
	return strings.EqualFold(jsTrim(name), SpawnToolName)
}

// RedactToolCallArgs returns args (a tool call's "arguments" or "input")
// with the content of every attachment replaced by [RedactedContent]. Use
// it on both members of every persisted assistant tool-call block for
// which [IsSpawnToolCall] holds.
//
// As in the reference, only an object's "attachments" array is touched:
// each element that is an object with a "content" member gets the
// placeholder as its last member, its other members kept in order;
// other elements, and args that are not an object or have no attachments
// array, come back unchanged (the same bytes). A changed result is
// compact JSON with the object's members in their original order.
func RedactToolCallArgs(args json.RawMessage) json.RawMessage {
	obj, ok := parseObject(args)
	if !ok {
		return args
	}
	i := obj.index("attachments")
	if i < 0 {
		return args
	}
	items, ok := parseArray(obj[i].value)
	if !ok {
		return args
	}
	placeholder, _ := json.Marshal(RedactedContent)
	for j, item := range items {
		a, ok := parseObject(item)
		if !ok {
			continue
		}
		k := a.index("content")
		if k < 0 {
			continue
		}
		a = append(a[:k:k], a[k+1:]...)
		a = append(a, member{key: "content", value: placeholder})
		items[j] = a.marshal()
	}
	var arr bytes.Buffer
	arr.WriteByte('[')
	for j, item := range items {
		if j > 0 {
			arr.WriteByte(',')
		}
		arr.Write(item)
	}
	arr.WriteByte(']')
	obj[i].value = arr.Bytes()
	return obj.marshal()
}

// member is one member of a JSON object.
type member struct {
	key   string
	value json.RawMessage
}

// object is a JSON object's members in order, one per distinct key.
type object []member

func (o object) index(key string) int {
	for i, m := range o {
		if m.key == key {
			return i
		}
	}
	return -1
}

// marshal returns o as compact JSON.
func (o object) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, m.value); err != nil {
			b.Write(m.value) // cannot happen: values come from a decoder
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// parseObject decodes a JSON object keeping its member order. A repeated
// key keeps its first position and its last value, as JSON.parse does.
func parseObject(raw json.RawMessage) (object, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var o object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if i := o.index(key); i >= 0 {
			o[i].value = v
		} else {
			o = append(o, member{key: key, value: v})
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	return o, true
}

// parseArray decodes a JSON array into its raw elements.
func parseArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, false
	}
	return items, true
}
