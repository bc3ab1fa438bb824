package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/agent"
)

// A batch of relayed events is text (a notification's payload, or a row
// of PostgreSQL's events table): the line frameMagic, then per event a
// header line
//
//	<kind> <seq> <quoted run id> <quoted session key> <identity>\n
//
// and the event's JSON on one line (encoding/json writes no raw newline):
// a wireEvent (wire.go) without the event's identity. The identity is
// its session id, agent id, lane and spawner, four quoted strings, or "="
// when they are those of the event of the same run before it in the frame
// (a run's events all share them: a warm turn's six events carry them
// once). A reader decides from the header alone whether it needs the
// event now, and decodes only those; the others are logged undecoded for
// watchers (agent.Runner.RelayLogged). Ids are quoted with strconv.Quote
// (valid UTF-8, no NUL: what a text column takes); the JSON of an event
// is too. Frames of the formats before are still read: frameMagicV3 (no
// identity in the header, the JSON carries it) and frameMagicV2 (the
// event's JSON is agent.Event's, every field).
const (
	frameMagic   = "SBR4\n"
	frameMagicV3 = "SBR3\n"
	frameMagicV2 = "SBR2\n"
)

// isFrame reports whether a notification's payload (after its origin) is
// a frame, not the id of one in the events table.
func isFrame(s string) bool {
	return strings.HasPrefix(s, frameMagic) || strings.HasPrefix(s, frameMagicV3) || strings.HasPrefix(s, frameMagicV2)
}

// Kinds of relayed events, by what every node does with them.
const (
	// kindEnd is a run's end: every node takes it (waiters, sub-agent
	// announces, channel replies, the session's change).
	kindEnd = 'e'
	// kindPost is a message posted into a session: every node takes it.
	kindPost = 'p'
	// kindRun is any other event of a run: a node decodes it only while
	// a subscriber wants the run (agent.Runner.WantsRelayed).
	kindRun = 'r'
	// kindCatchUp is an event of a run sent again for a node that started
	// wanting the run's session mid-run (wants.go): a node logs it, and
	// hands it to its subscribers only when it was emitted after the node
	// started wanting the session. Only nodes that announce what they
	// want send it (a node of a version before takes it as an end).
	kindCatchUp = 'c'
)

// relayed is one event of a batch as read: its header, and its JSON.
type relayed struct {
	kind       byte
	seq        int64
	runID      string
	sessionKey string
	// id is the event's identity from its header; nil in the formats
	// before, whose JSON carries it.
	id      *identity
	payload []byte
	v2      bool // payload is agent.Event's JSON (frameMagicV2)
}

// identity is what every event of a run carries besides its ids: written
// once per run in a frame's headers.
type identity struct {
	sessionID, agentID, lane, spawnedBy string
}

func identityOf(ev *agent.Event) identity {
	return identity{sessionID: ev.SessionID, agentID: ev.AgentID, lane: ev.Lane, spawnedBy: ev.SpawnedBy}
}

// always reports whether every node takes the event, wanted or not (a
// kindCatchUp is asked about before).
func (e relayed) always() bool { return e.kind != kindRun }

// decode decodes the event's JSON.
func (e relayed) decode() (agent.Event, error) {
	if e.v2 {
		var ev agent.Event
		err := json.Unmarshal(e.payload, &ev)
		return ev, err
	}
	var w wireEvent
	if err := json.Unmarshal(e.payload, &w); err != nil {
		return agent.Event{}, err
	}
	if id := e.id; id != nil {
		w.SessionID, w.AgentID, w.Lane, w.SpawnedBy = id.sessionID, id.agentID, id.lane, id.spawnedBy
	}
	return w.event(e.runID, e.sessionKey, e.seq), nil
}

func kindOf(ev agent.Event) byte {
	switch {
	case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd:
		return kindEnd
	case ev.Stream == agent.StreamPost:
		return kindPost
	}
	return kindRun
}

// encodeFrame encodes a batch of events as one frame.
func encodeFrame(evs []agent.Event) ([]byte, error) {
	frames, err := encodeFrames(evs, math.MaxInt)
	if err != nil || len(frames) == 0 {
		return []byte(frameMagic), err
	}
	return frames[0], nil
}

// encodeFrames encodes a batch of events as frames of at most limit bytes,
// in order; an event too large for one gets a frame of its own.
func encodeFrames(evs []agent.Event, limit int) ([][]byte, error) {
	return encodeFramesAs(evs, limit, false)
}

// encodeFramesAs is encodeFrames; with catchUp, events of kindRun are
// written as kindCatchUp.
func encodeFramesAs(evs []agent.Event, limit int, catchUp bool) ([][]byte, error) {
	var (
		frames [][]byte
		cur    []byte
		js     bytes.Buffer
		head   []byte
		// last is the identity each run's last event in cur carries.
		last = map[string]identity{}
	)
	enc := json.NewEncoder(&js)
	for _, ev := range evs {
		js.Reset()
		// The JSON and a newline; the identity goes in the header.
		w := toWire(&ev)
		w.SessionID, w.AgentID, w.Lane, w.SpawnedBy = "", "", "", ""
		if err := enc.Encode(w); err != nil {
			return nil, fmt.Errorf("relay frame: run %s: %w", ev.RunID, err)
		}
		id := identityOf(&ev)
		prev, same := last[ev.RunID]
		head = appendHeader(head[:0], &ev, id, same && prev == id, catchUp)
		if cur != nil && len(cur)+len(head)+js.Len() > limit {
			frames, cur = append(frames, cur), nil
			clear(last)
			head = appendHeader(head[:0], &ev, id, false, catchUp)
		}
		if cur == nil {
			cur = make([]byte, 0, min(limit, 8192))
			cur = append(cur, frameMagic...)
		}
		cur = append(cur, head...)
		cur = append(cur, js.Bytes()...)
		last[ev.RunID] = id
	}
	if cur != nil {
		frames = append(frames, cur)
	}
	return frames, nil
}

// appendHeader appends ev's header line; same writes its identity id as
// "=" (that of the run's event before it in the frame); catchUp writes a
// kindRun as kindCatchUp.
func appendHeader(b []byte, ev *agent.Event, id identity, same, catchUp bool) []byte {
	kind := kindOf(*ev)
	if catchUp && kind == kindRun {
		kind = kindCatchUp
	}
	b = append(b, kind, ' ')
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, ev.RunID)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, ev.SessionKey)
	if same {
		b = append(b, " ="...)
	} else {
		for _, s := range [...]string{id.sessionID, id.agentID, id.lane, id.spawnedBy} {
			b = append(b, ' ')
			b = strconv.AppendQuote(b, s)
		}
	}
	return append(b, '\n')
}

var errBadFrame = errors.New("bad relay frame")

// decodeFrame splits a batch into its events, without decoding their
// JSON. A batch in the first format (a JSON array of events, from a node
// of an older version) comes back as events every node takes.
func decodeFrame(body []byte) ([]relayed, error) {
	if len(body) > 0 && body[0] == '[' {
		var evs []json.RawMessage
		if err := json.Unmarshal(body, &evs); err != nil {
			return nil, err
		}
		out := make([]relayed, len(evs))
		for i, raw := range evs {
			out[i] = relayed{kind: kindEnd, payload: raw, v2: true}
		}
		return out, nil
	}
	rest, v4 := bytes.CutPrefix(body, []byte(frameMagic))
	v2 := false
	if !v4 {
		var v3 bool
		if rest, v3 = bytes.CutPrefix(body, []byte(frameMagicV3)); !v3 {
			if rest, v2 = bytes.CutPrefix(body, []byte(frameMagicV2)); !v2 {
				return nil, fmt.Errorf("%w: no magic", errBadFrame)
			}
		}
	}
	var (
		out  []relayed
		last map[string]*identity // each run's identity, as of its last event
	)
	for len(rest) > 0 {
		line, after, ok := bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("%w: header without end", errBadFrame)
		}
		e, idText, err := parseHeader(string(line), v4)
		if err != nil {
			return nil, err
		}
		if v4 {
			if idText == "=" {
				if e.id = last[e.runID]; e.id == nil {
					return nil, badHeader(string(line))
				}
			} else {
				if e.id, err = parseIdentity(idText); err != nil {
					return nil, err
				}
				if last == nil {
					last = make(map[string]*identity)
				}
				last[e.runID] = e.id
			}
		}
		if e.payload, rest, ok = bytes.Cut(after, []byte{'\n'}); !ok {
			return nil, fmt.Errorf("%w: event without end", errBadFrame)
		}
		e.v2 = v2
		out = append(out, e)
	}
	return out, nil
}

// parseHeader parses a header line; with ident (the current format) the
// line ends with the event's identity, returned unparsed (parseIdentity).
func parseHeader(line string, ident bool) (e relayed, idText string, err error) {
	if len(line) < 2 || line[1] != ' ' {
		return e, "", badHeader(line)
	}
	e.kind = line[0]
	seq, rest, ok := strings.Cut(line[2:], " ")
	if !ok {
		return e, "", badHeader(line)
	}
	if e.seq, err = strconv.ParseInt(seq, 10, 64); err != nil {
		return e, "", badHeader(line)
	}
	if e.runID, rest, err = unquotePrefix(rest); err != nil {
		return e, "", err
	}
	if len(rest) == 0 || rest[0] != ' ' {
		return e, "", badHeader(line)
	}
	if e.sessionKey, rest, err = unquotePrefix(rest[1:]); err != nil {
		return e, "", err
	}
	if ident {
		if len(rest) < 2 || rest[0] != ' ' {
			return e, "", badHeader(line)
		}
		return e, rest[1:], nil
	}
	if rest != "" {
		return e, "", badHeader(line)
	}
	return e, "", nil
}

// parseIdentity parses a header's four quoted identity strings.
func parseIdentity(s string) (*identity, error) {
	var f [4]string
	for i := range f {
		if i > 0 {
			if len(s) == 0 || s[0] != ' ' {
				return nil, badHeader(s)
			}
			s = s[1:]
		}
		var err error
		if f[i], s, err = unquotePrefix(s); err != nil {
			return nil, err
		}
	}
	if s != "" {
		return nil, badHeader(s)
	}
	return &identity{sessionID: f[0], agentID: f[1], lane: f[2], spawnedBy: f[3]}, nil
}

func badHeader(line string) error { return fmt.Errorf("%w: header %.40q", errBadFrame, line) }

// unquotePrefix unquotes the quoted string s starts with.
func unquotePrefix(s string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", fmt.Errorf("%w: %.40q: %w", errBadFrame, s, err)
	}
	v, err := strconv.Unquote(q)
	if err != nil {
		return "", "", fmt.Errorf("%w: %.40q: %w", errBadFrame, s, err)
	}
	return v, s[len(q):], nil
}
