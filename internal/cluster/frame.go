package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/agent"
)

// A batch of relayed events is stored as text (PostgreSQL's text column):
// the line frameMagic, then per event a header line
//
//	<kind> <seq> <payload length> <quoted run id> <quoted session key>\n
//
// and the event's JSON (the payload). A reader decides from the header
// alone whether it needs the event now, and decodes only those; the
// others are logged undecoded for watchers (agent.Runner.RelayLogged). Ids are quoted with strconv.Quote (valid UTF-8, no NUL: what a
// text column takes); the JSON of an event is too.
const frameMagic = "SBR2\n"

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
)

// relayed is one event of a batch as read: its header, and its JSON.
type relayed struct {
	kind       byte
	seq        int64
	runID      string
	sessionKey string
	payload    []byte
}

// always reports whether every node takes the event, wanted or not.
func (e relayed) always() bool { return e.kind != kindRun }

// decode decodes the event's JSON.
func (e relayed) decode() (agent.Event, error) {
	var ev agent.Event
	err := json.Unmarshal(e.payload, &ev)
	return ev, err
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

// encodeFrame encodes a batch of events.
func encodeFrame(evs []agent.Event) ([]byte, error) {
	b := make([]byte, 0, 512*len(evs))
	b = append(b, frameMagic...)
	for _, ev := range evs {
		payload, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("relay frame: run %s: %w", ev.RunID, err)
		}
		b = append(b, kindOf(ev), ' ')
		b = strconv.AppendInt(b, ev.Seq, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(payload)), 10)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, ev.RunID)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, ev.SessionKey)
		b = append(b, '\n')
		b = append(b, payload...)
	}
	return b, nil
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
			out[i] = relayed{kind: kindEnd, payload: raw}
		}
		return out, nil
	}
	rest, ok := bytes.CutPrefix(body, []byte(frameMagic))
	if !ok {
		return nil, fmt.Errorf("%w: no magic", errBadFrame)
	}
	var out []relayed
	for len(rest) > 0 {
		line, after, ok := bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("%w: header without end", errBadFrame)
		}
		e, n, err := parseHeader(string(line))
		if err != nil {
			return nil, err
		}
		if n > len(after) {
			return nil, fmt.Errorf("%w: payload of %d bytes, %d left", errBadFrame, n, len(after))
		}
		e.payload, rest = after[:n], after[n:]
		out = append(out, e)
	}
	return out, nil
}

// parseHeader parses a header line; n is the payload's length.
func parseHeader(line string) (e relayed, n int, err error) {
	if len(line) < 2 || line[1] != ' ' {
		return e, 0, fmt.Errorf("%w: header %.40q", errBadFrame, line)
	}
	e.kind = line[0]
	seq, rest, ok := strings.Cut(line[2:], " ")
	if !ok {
		return e, 0, fmt.Errorf("%w: header %.40q", errBadFrame, line)
	}
	if e.seq, err = strconv.ParseInt(seq, 10, 64); err != nil {
		return e, 0, fmt.Errorf("%w: header %.40q", errBadFrame, line)
	}
	size, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return e, 0, fmt.Errorf("%w: header %.40q", errBadFrame, line)
	}
	if n, err = strconv.Atoi(size); err != nil || n < 0 {
		return e, 0, fmt.Errorf("%w: header %.40q", errBadFrame, line)
	}
	if e.runID, rest, err = unquotePrefix(rest); err != nil {
		return e, 0, err
	}
	if len(rest) == 0 || rest[0] != ' ' {
		return e, 0, fmt.Errorf("%w: header %.40q", errBadFrame, line)
	}
	if e.sessionKey, rest, err = unquotePrefix(rest[1:]); err != nil {
		return e, 0, err
	}
	if rest != "" {
		return e, 0, fmt.Errorf("%w: header %.40q", errBadFrame, line)
	}
	return e, n, nil
}

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
