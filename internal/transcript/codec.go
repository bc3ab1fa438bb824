package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"github.com/switchboardhq/switchboard/internal/lazy"
)

// Hand-rolled on purpose: a transcript must keep every member byte for
// byte, unknown ones included, which encoding/json would drop or reshape.
// The codecs below are table driven: a codec lists the known members of a
// struct in struct order, each with an encoder and a strict decoder, and
// handles Extra uniformly.
//
// Round-tripping rules:
//
//   - Unknown members go to Extra verbatim (compacted) and are written back
//     after the known members, sorted by name.
//   - A known member whose value would not be written back as it was read —
//     an empty string in an omitempty field, a null, or a nested object with
//     members the Go type cannot hold — is decoded into its field AND kept in
//     Extra under its own name (a "shadow"). When marshalling, the shadow is
//     written in place of the field only while it still decodes to the
//     field's current value, so changing the field wins over the shadow.
//   - Types without Extra (Usage, Cost, Provenance) report such losses to
//     their parent, which then shadows the whole nested object.
//   - Member names match exactly (encoding/json matches struct fields
//     case-insensitively; the transcript format does not).

// maxFields bounds the number of known members of a codec (bit masks).
const maxFields = 64

// field is one known JSON member of a struct of type T.
type field[T any] struct {
	name string
	key  []byte // `,"name":`
	// enc appends the member's value to b and reports whether the member is
	// written at all; when it is not, b is returned unchanged.
	enc func(b []byte, v *T) ([]byte, bool, error)
	// dec replaces v's field with the decoded val (valid JSON). keep reports
	// that val must also be kept in Extra for the member to round-trip.
	dec func(v *T, val []byte) (keep bool, err error)
}

// codec encodes and decodes a struct type T as a JSON object.
type codec[T any] struct {
	fields []field[T]
	index  map[string]int
	// first is the index of the discriminating field (type or role),
	// decoded before the others, or -1.
	first int
	// known returns the mask of fields that are known members for v (they
	// depend on v's type for entries and blocks); nil means all.
	known func(v *T) uint64
	// extra returns v's Extra map; nil when T has none.
	extra func(v *T) *map[string]json.RawMessage
}

func newCodec[T any](extra func(*T) *map[string]json.RawMessage, fields ...field[T]) *codec[T] {
	if len(fields) > maxFields {
		panic("transcript: too many fields")
	}
	c := &codec[T]{fields: fields, index: make(map[string]int, len(fields)), first: -1, extra: extra}
	for i, f := range fields {
		c.index[f.name] = i
	}
	return c
}

// mask returns the bit mask of the named fields.
func (c *codec[T]) mask(names ...string) uint64 {
	var m uint64
	for _, n := range names {
		i, ok := c.index[n]
		if !ok {
			panic("transcript: unknown field " + n)
		}
		m |= 1 << i
	}
	return m
}

func (c *codec[T]) knownMask(v *T) uint64 {
	if c.known == nil {
		return ^uint64(0)
	}
	return c.known(v)
}

// decode decodes the valid JSON value obj into *v, which must be the zero
// value. lossy reports (for types without Extra) that re-encoding *v would not
// reproduce obj.
func (c *codec[T]) decode(v *T, obj []byte) (lossy bool, err error) {
	if obj[0] != '{' {
		return false, typeError("object", obj)
	}
	var stack [24]member
	ms := appendMembers(stack[:0], obj)
	if c.first >= 0 {
		f := &c.fields[c.first]
		for i := len(ms) - 1; i >= 0; i-- {
			if string(ms[i].name) == f.name {
				if _, err := f.dec(v, ms[i].val); err != nil {
					return false, fieldError(f.name, err)
				}
				break
			}
		}
	}
	known := c.knownMask(v)
	var extra map[string]json.RawMessage
	var seen uint64
	for _, m := range ms {
		i, ok := c.index[string(m.name)]
		if ok && known&(1<<i) != 0 {
			f := &c.fields[i]
			keep, err := f.dec(v, m.val)
			if err != nil {
				return false, fieldError(f.name, err)
			}
			seen |= 1 << i
			switch {
			case keep && c.extra == nil:
				lossy = true
			case keep:
				extra = put(extra, f.name, m.val)
			default:
				delete(extra, f.name) // an earlier duplicate member
			}
			continue
		}
		if c.extra == nil {
			lossy = true
			continue
		}
		extra = put(extra, string(m.name), m.val)
	}
	if c.extra != nil {
		if len(extra) > 0 {
			*c.extra(v) = extra
		}
		return false, nil
	}
	if !lossy {
		// A member missing from obj but written anyway would be added.
		for i := range c.fields {
			if seen&(1<<i) == 0 && known&(1<<i) != 0 {
				if _, written, _ := c.fields[i].enc(nil, v); written {
					return true, nil
				}
			}
		}
	}
	return lossy, nil
}

func put(m map[string]json.RawMessage, k string, v []byte) map[string]json.RawMessage {
	if m == nil {
		m = make(map[string]json.RawMessage)
	}
	m[k] = cloneRaw(v)
	return m
}

// encode appends v as a JSON object to b.
func (c *codec[T]) encode(b []byte, v *T) ([]byte, error) {
	var extra map[string]json.RawMessage
	if c.extra != nil {
		extra = *c.extra(v)
	}
	known := c.knownMask(v)
	start := len(b)
	var written uint64
	for i := range c.fields {
		f := &c.fields[i]
		mark := len(b)
		b = append(b, f.key...)
		if known&(1<<i) != 0 && len(extra) > 0 {
			if raw, ok := extra[f.name]; ok && c.shadowHolds(v, f, raw) {
				var err error
				if b, err = appendRaw(b, raw); err != nil {
					return nil, fieldError(f.name, err)
				}
				written |= 1 << i
				continue
			}
		}
		var ok bool
		var err error
		if b, ok, err = f.enc(b, v); err != nil {
			return nil, fieldError(f.name, err)
		}
		if !ok {
			b = b[:mark]
			continue
		}
		written |= 1 << i
	}
	if len(extra) > 0 {
		for _, k := range slices.Sorted(maps.Keys(extra)) {
			if i, ok := c.index[k]; ok && (written|known)&(1<<i) != 0 {
				// Either the field was written, or k is a stale shadow.
				continue
			}
			b = append(b, ',')
			b = jsonenc.AppendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendRaw(b, extra[k]); err != nil {
				return nil, fieldError(k, err)
			}
		}
	}
	if len(b) == start {
		b = append(b, '{')
	} else {
		b[start] = '{' // replace the first member's comma
	}
	return append(b, '}'), nil
}

// shadowHolds reports whether the shadow raw of field f still decodes to v's
// current value of f.
func (c *codec[T]) shadowHolds(v *T, f *field[T], raw json.RawMessage) bool {
	raw = trimSpace(raw)
	if len(raw) == 0 || !json.Valid(raw) {
		return false
	}
	tmp := *v
	if _, err := f.dec(&tmp, raw); err != nil {
		return false
	}
	var buf [64]byte
	a, okA, errA := f.enc(buf[:0], &tmp)
	n := len(a)
	ab, okB, errB := f.enc(a, v)
	return errA == nil && errB == nil && okA == okB && bytes.Equal(ab[:n], ab[n:])
}

// pathError locates a decoding error inside a line, as in
// "message.content[1].text: want string, got number".
type pathError struct {
	path string
	err  error
}

// Error returns "path: err".
func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }

// Unwrap returns the underlying error.
func (e *pathError) Unwrap() error { return e.err }

func fieldError(name string, err error) error {
	if pe, ok := err.(*pathError); ok {
		sep := "."
		if strings.HasPrefix(pe.path, "[") {
			sep = ""
		}
		return &pathError{path: name + sep + pe.path, err: pe.err}
	}
	return &pathError{path: name, err: err}
}

func indexError(i int, err error) error { return fieldError(fmt.Sprintf("[%d]", i), err) }

// Field constructors. p returns a pointer to the field inside v.

func newField[T any](name string, enc func([]byte, *T) ([]byte, bool, error), dec func(*T, []byte) (bool, error)) field[T] {
	return field[T]{name: name, key: []byte(`,"` + name + `":`), enc: enc, dec: dec}
}

// stringField is a string member; unless always, it is omitted when empty.
func stringField[T any](name string, always bool, p func(*T) *string) field[T] {
	return newField(name,
		func(b []byte, v *T) ([]byte, bool, error) {
			s := *p(v)
			if s == "" && !always {
				return b, false, nil
			}
			return jsonenc.AppendString(b, s), true, nil
		},
		func(v *T, val []byte) (bool, error) {
			s, err := decodeString(val)
			if err != nil {
				return false, err
			}
			*p(v) = s
			return isNull(val) || (s == "" && !always), nil
		})
}

// stringPtrField is a *string member. A nil pointer is written as null when
// nullable, and omitted otherwise.
func stringPtrField[T any](name string, nullable bool, p func(*T) **string) field[T] {
	return newField(name,
		func(b []byte, v *T) ([]byte, bool, error) {
			switch s := *p(v); {
			case s != nil:
				return jsonenc.AppendString(b, *s), true, nil
			case nullable:
				return append(b, "null"...), true, nil
			}
			return b, false, nil
		},
		func(v *T, val []byte) (bool, error) {
			switch val[0] {
			case 'n':
				*p(v) = nil
				return !nullable, nil
			case '"':
				s := string(unquote(val))
				*p(v) = &s
				return false, nil
			}
			return false, typeError("string", val)
		})
}

// intField is an integer member; unless always, it is omitted when zero.
func intField[T any, N ~int | ~int64](name string, always bool, p func(*T) *N) field[T] {
	return newField(name,
		func(b []byte, v *T) ([]byte, bool, error) {
			n := *p(v)
			if n == 0 && !always {
				return b, false, nil
			}
			return strconv.AppendInt(b, int64(n), 10), true, nil
		},
		func(v *T, val []byte) (bool, error) {
			n, err := decodeInt(val)
			if err != nil {
				return false, err
			}
			*p(v) = N(n)
			return isNull(val) || (n == 0 && !always), nil
		})
}

// floatField is a number member, always written.
func floatField[T any](name string, p func(*T) *float64) field[T] {
	return newField(name,
		func(b []byte, v *T) ([]byte, bool, error) {
			b2, err := appendFloat(b, *p(v))
			return b2, err == nil, err
		},
		func(v *T, val []byte) (bool, error) {
			f, err := decodeFloat(val)
			if err != nil {
				return false, err
			}
			*p(v) = f
			return isNull(val), nil
		})
}

// boolPtrField is a *bool member, omitted when nil.
func boolPtrField[T any](name string, p func(*T) **bool) field[T] {
	return newField(name,
		func(b []byte, v *T) ([]byte, bool, error) {
			x := *p(v)
			if x == nil {
				return b, false, nil
			}
			if *x {
				return append(b, "true"...), true, nil
			}
			return append(b, "false"...), true, nil
		},
		func(v *T, val []byte) (bool, error) {
			x, null, err := decodeBool(val)
			if err != nil {
				return false, err
			}
			if null {
				*p(v) = nil
				return true, nil
			}
			*p(v) = &x
			return false, nil
		})
}

// rawField is a member of any JSON type kept verbatim, omitted when empty.
func rawField[T any](name string, p func(*T) *json.RawMessage) field[T] {
	return newField(name,
		func(b []byte, v *T) ([]byte, bool, error) {
			raw := *p(v)
			if len(raw) == 0 {
				return b, false, nil
			}
			b2, err := appendRaw(b, raw)
			return b2, err == nil, err
		},
		func(v *T, val []byte) (bool, error) {
			*p(v) = cloneRaw(val)
			return false, nil
		})
}

// objectField is a pointer-to-struct member, omitted when nil.
func objectField[T, U any](name string, c *codec[U], p func(*T) **U) field[T] {
	return newField(name,
		func(b []byte, v *T) ([]byte, bool, error) {
			u := *p(v)
			if u == nil {
				return b, false, nil
			}
			b2, err := c.encode(b, u)
			return b2, err == nil, err
		},
		func(v *T, val []byte) (bool, error) {
			if isNull(val) {
				*p(v) = nil
				return true, nil
			}
			u := new(U)
			lossy, err := c.decode(u, val)
			if err != nil {
				return false, err
			}
			*p(v) = u
			return lossy, nil
		})
}

// The codecs, each built on first use so that the package has no
// init-time work (a start that reads no transcript builds none). Field
// order is struct order.

var headerCodec = lazy.Value[*codec[Header]]{New: func() *codec[Header] {
	return newCodec(func(h *Header) *map[string]json.RawMessage { return &h.Extra },
		stringField("type", true, func(h *Header) *string { return &h.Type }),
		intField("version", false, func(h *Header) *int { return &h.Version }),
		stringField("id", true, func(h *Header) *string { return &h.ID }),
		stringField("timestamp", true, func(h *Header) *string { return &h.Timestamp }),
		stringField("cwd", false, func(h *Header) *string { return &h.Cwd }),
		stringField("parentSession", false, func(h *Header) *string { return &h.ParentSession }),
	)
}}

var entryCodec = lazy.Value[*codec[Entry]]{New: newEntryCodec}

func newEntryCodec() *codec[Entry] {
	c := newCodec(func(e *Entry) *map[string]json.RawMessage { return &e.Extra },
		stringField("type", true, func(e *Entry) *string { return &e.Type }),
		stringField("id", true, func(e *Entry) *string { return &e.ID }),
		stringPtrField("parentId", true, func(e *Entry) **string { return &e.ParentID }),
		stringField("timestamp", true, func(e *Entry) *string { return &e.Timestamp }),
		objectField("message", messageCodec.Get(), func(e *Entry) **Message { return &e.Message }),
	)
	c.first = c.index["type"]
	base := c.mask("type", "id", "parentId", "timestamp")
	withMessage := base | c.mask("message")
	c.known = func(e *Entry) uint64 {
		if e.Type == TypeMessage {
			return withMessage
		}
		return base
	}
	return c
}

var messageCodec = lazy.Value[*codec[Message]]{New: newMessageCodec}

func newMessageCodec() *codec[Message] {
	c := newCodec(func(m *Message) *map[string]json.RawMessage { return &m.Extra },
		stringField("role", true, func(m *Message) *string { return &m.Role }),
		newField("content",
			func(b []byte, m *Message) ([]byte, bool, error) {
				if m.Content.empty() && !contentRequired(m.Role) {
					return b, false, nil
				}
				b2, err := appendContent(b, &m.Content)
				return b2, err == nil, err
			},
			func(m *Message, val []byte) (bool, error) {
				ct, err := decodeContent(val)
				if err != nil {
					return false, err
				}
				m.Content = ct
				return ct.empty() && !contentRequired(m.Role), nil
			}),
		intField("timestamp", true, func(m *Message) *int64 { return &m.Timestamp }),
		stringField("api", false, func(m *Message) *string { return &m.API }),
		stringField("provider", false, func(m *Message) *string { return &m.Provider }),
		stringField("model", false, func(m *Message) *string { return &m.Model }),
		objectField("usage", usageCodec.Get(), func(m *Message) **Usage { return &m.Usage }),
		stringField("stopReason", false, func(m *Message) *string { return &m.StopReason }),
		stringField("errorMessage", false, func(m *Message) *string { return &m.ErrorMessage }),
		stringField("responseId", false, func(m *Message) *string { return &m.ResponseID }),
		stringField("toolCallId", false, func(m *Message) *string { return &m.ToolCallID }),
		stringField("toolName", false, func(m *Message) *string { return &m.ToolName }),
		rawField("details", func(m *Message) *json.RawMessage { return &m.Details }),
		boolPtrField("isError", func(m *Message) **bool { return &m.IsError }),
		stringField("idempotencyKey", false, func(m *Message) *string { return &m.IdempotencyKey }),
		objectField("provenance", provenanceCodec.Get(), func(m *Message) **Provenance { return &m.Provenance }),
		objectField("__openclaw", metaCodec.Get(), func(m *Message) **Meta { return &m.Meta }),
	)
	c.first = c.index["role"]
	return c
}

// contentRequired reports whether messages of role always carry content.
// Other roles (the pi agent's bashExecution, branchSummary, …) may have
// none, and then none is written.
func contentRequired(role string) bool {
	switch role {
	case RoleUser, RoleAssistant, RoleToolResult, RoleTool:
		return true
	}
	return false
}

var metaCodec = lazy.Value[*codec[Meta]]{New: func() *codec[Meta] {
	return newCodec(func(m *Meta) *map[string]json.RawMessage { return &m.Extra },
		stringField("runId", false, func(m *Meta) *string { return &m.RunID }),
	)
}}

var provenanceCodec = lazy.Value[*codec[Provenance]]{New: func() *codec[Provenance] {
	return newCodec[Provenance](nil,
		stringField("kind", true, func(p *Provenance) *string { return &p.Kind }),
		stringField("sourceSessionKey", false, func(p *Provenance) *string { return &p.SourceSessionKey }),
		stringField("sourceChannel", false, func(p *Provenance) *string { return &p.SourceChannel }),
		stringField("sourceTool", false, func(p *Provenance) *string { return &p.SourceTool }),
		stringField("chainId", false, func(p *Provenance) *string { return &p.ChainID }),
		intField("chainHops", false, func(p *Provenance) *int { return &p.ChainHops }),
		stringField("untrusted", false, func(p *Provenance) *string { return &p.Untrusted }),
	)
}}

var usageCodec = lazy.Value[*codec[Usage]]{New: func() *codec[Usage] {
	return newCodec[Usage](nil,
		intField("input", true, func(u *Usage) *int64 { return &u.Input }),
		intField("output", true, func(u *Usage) *int64 { return &u.Output }),
		intField("cacheRead", true, func(u *Usage) *int64 { return &u.CacheRead }),
		intField("cacheWrite", true, func(u *Usage) *int64 { return &u.CacheWrite }),
		intField("totalTokens", true, func(u *Usage) *int64 { return &u.TotalTokens }),
		objectField("cost", costCodec.Get(), func(u *Usage) **Cost { return &u.Cost }),
	)
}}

var costCodec = lazy.Value[*codec[Cost]]{New: func() *codec[Cost] {
	return newCodec[Cost](nil,
		floatField("input", func(c *Cost) *float64 { return &c.Input }),
		floatField("output", func(c *Cost) *float64 { return &c.Output }),
		floatField("cacheRead", func(c *Cost) *float64 { return &c.CacheRead }),
		floatField("cacheWrite", func(c *Cost) *float64 { return &c.CacheWrite }),
		floatField("total", func(c *Cost) *float64 { return &c.Total }),
	)
}}

var blockCodec = lazy.Value[*codec[Block]]{New: newBlockCodec}

func newBlockCodec() *codec[Block] {
	c := newCodec(func(b *Block) *map[string]json.RawMessage { return &b.Extra },
		stringField("type", true, func(b *Block) *string { return &b.Type }),
		stringPtrField("text", false, func(b *Block) **string { return &b.Text }),
		stringPtrField("thinking", false, func(b *Block) **string { return &b.Thinking }),
		stringField("thinkingSignature", false, func(b *Block) *string { return &b.ThinkingSignature }),
		stringField("id", false, func(b *Block) *string { return &b.ID }),
		stringField("name", false, func(b *Block) *string { return &b.Name }),
		rawField("arguments", func(b *Block) *json.RawMessage { return &b.Arguments }),
		stringField("data", false, func(b *Block) *string { return &b.Data }),
		stringField("mimeType", false, func(b *Block) *string { return &b.MimeType }),
	)
	c.first = c.index["type"]
	byType := map[string]uint64{
		BlockText:     c.mask("type", "text"),
		BlockThinking: c.mask("type", "thinking", "thinkingSignature"),
		BlockToolCall: c.mask("type", "id", "name", "arguments"),
		BlockImage:    c.mask("type", "data", "mimeType"),
	}
	other := c.mask("type")
	c.known = func(b *Block) uint64 {
		if m, ok := byType[b.Type]; ok {
			return m
		}
		return other
	}
	return c
}

func (c *Content) empty() bool { return c.String == nil && len(c.Blocks) == 0 }

func appendContent(b []byte, c *Content) ([]byte, error) {
	if c.String != nil {
		return jsonenc.AppendString(b, *c.String), nil
	}
	b = append(b, '[')
	for i := range c.Blocks {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = blockCodec.Get().encode(b, &c.Blocks[i]); err != nil {
			return nil, indexError(i, err)
		}
	}
	return append(b, ']'), nil
}

func decodeContent(val []byte) (Content, error) {
	switch val[0] {
	case 'n':
		return Content{}, nil
	case '"':
		s := string(unquote(val))
		return Content{String: &s}, nil
	case '[':
		var blocks []Block
		err := eachElement(val, func(i int, el []byte) error {
			var blk Block
			if _, err := blockCodec.Get().decode(&blk, el); err != nil {
				return indexError(i, err)
			}
			blocks = append(blocks, blk)
			return nil
		})
		return Content{Blocks: blocks}, err
	}
	return Content{}, typeError("string or array", val)
}

// marshal and unmarshal back the exported methods.

func marshal[T any](c *codec[T], v *T) ([]byte, error) {
	b, err := c.encode(nil, v)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	return b, nil
}

func unmarshal[T any](c *codec[T], v *T, data []byte) error {
	data = trimSpace(data)
	if !json.Valid(data) {
		return fmt.Errorf("transcript: %w", syntaxError(data))
	}
	if isNull(data) {
		return nil // the json.Unmarshaler convention
	}
	var x T
	if _, err := c.decode(&x, data); err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	*v = x
	return nil
}

// MarshalJSON implements json.Marshaler. Known fields are written in struct
// order, then Extra in key order; Version is omitted when zero.
func (h Header) MarshalJSON() ([]byte, error) { return marshal(headerCodec.Get(), &h) }

// UnmarshalJSON implements json.Unmarshaler. Fields of the wrong JSON type
// are an error; unknown fields go to Extra.
func (h *Header) UnmarshalJSON(data []byte) error { return unmarshal(headerCodec.Get(), h, data) }

// MarshalJSON implements json.Marshaler. Known fields are written in struct
// order, then Extra in key order. ParentID is written as null when nil, and
// Message is written only when set.
func (e Entry) MarshalJSON() ([]byte, error) { return marshal(entryCodec.Get(), &e) }

// AppendJSON appends e's MarshalJSON bytes to b (a caller that copies
// the line out can encode into a buffer it reuses).
func (e *Entry) AppendJSON(b []byte) ([]byte, error) {
	out, err := entryCodec.Get().encode(b, e)
	if err != nil {
		return b, fmt.Errorf("transcript: %w", err)
	}
	return out, nil
}

// UnmarshalJSON implements json.Unmarshaler. Fields of the wrong JSON type
// are an error. For entries of type "message" the message member is decoded
// into Message; every other member, including the type-specific fields of
// other entry types, goes to Extra verbatim.
func (e *Entry) UnmarshalJSON(data []byte) error { return unmarshal(entryCodec.Get(), e, data) }

// MarshalJSON implements json.Marshaler. Known fields are written in struct
// order (empty optional ones omitted), then Extra in key order. Content is
// always written for the user, assistant, toolResult and tool roles.
func (m Message) MarshalJSON() ([]byte, error) { return marshal(messageCodec.Get(), &m) }

// AppendJSON appends m's MarshalJSON bytes to b (a caller that knows about
// how long the message is can encode it without growing a buffer).
func (m *Message) AppendJSON(b []byte) ([]byte, error) {
	out, err := messageCodec.Get().encode(b, m)
	if err != nil {
		return b, fmt.Errorf("transcript: %w", err)
	}
	return out, nil
}

// UnmarshalJSON implements json.Unmarshaler. Fields of the wrong JSON type
// (a non-string role, a non-integer timestamp, …) are an error; unknown
// fields go to Extra.
func (m *Message) UnmarshalJSON(data []byte) error { return unmarshal(messageCodec.Get(), m, data) }

// MarshalJSON implements json.Marshaler: RunID (when set), then Extra in key
// order.
func (m Meta) MarshalJSON() ([]byte, error) { return marshal(metaCodec.Get(), &m) }

// UnmarshalJSON implements json.Unmarshaler.
func (m *Meta) UnmarshalJSON(data []byte) error { return unmarshal(metaCodec.Get(), m, data) }

// MarshalJSON implements json.Marshaler. The type is written first, then
// every non-empty field in struct order, then Extra in key order.
func (b Block) MarshalJSON() ([]byte, error) { return marshal(blockCodec.Get(), &b) }

// UnmarshalJSON implements json.Unmarshaler. Only the fields of the block's
// type are decoded (text: text; thinking: thinking, thinkingSignature;
// toolCall: id, name, arguments; image: data, mimeType); every other member
// goes to Extra.
func (b *Block) UnmarshalJSON(data []byte) error { return unmarshal(blockCodec.Get(), b, data) }

// MarshalJSON implements json.Marshaler: the string when String is set,
// otherwise the blocks as an array ([] when there are none, never null).
func (c Content) MarshalJSON() ([]byte, error) {
	b, err := appendContent(nil, &c)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", fieldError("content", err))
	}
	return b, nil
}

// UnmarshalJSON implements json.Unmarshaler: a JSON string sets String, an
// array sets Blocks, and null gives empty content. Other types are an error.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = trimSpace(data)
	if !json.Valid(data) {
		return fmt.Errorf("transcript: %w", syntaxError(data))
	}
	x, err := decodeContent(data)
	if err != nil {
		return fmt.Errorf("transcript: %w", fieldError("content", err))
	}
	*c = x
	return nil
}
