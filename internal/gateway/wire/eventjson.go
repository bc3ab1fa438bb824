package wire

import (
	"encoding/json"
	"strconv"

	"github.com/switchboardhq/switchboard/internal/jsonenc"
)

// The run events are the frames a gateway sends most (several per turn,
// to every client): AppendJSON writes them without reflection, byte for
// byte as json.Marshal does, given raw members as json.Marshal makes them
// (compact, HTML-escaped): those are written as they are, not compacted
// again.

// AppendJSON appends e as json.Marshal encodes it. Data must be compact
// JSON as json.Marshal writes it (nil is written as null).
func (e *AgentEvent) AppendJSON(b []byte) []byte {
	b = append(b, `{"runId":`...)
	b = appendHTMLString(b, e.RunID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"stream":`...)
	b = appendHTMLString(b, e.Stream)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, e.TS, 10)
	b = append(b, `,"data":`...)
	b = appendRaw(b, e.Data)
	b = appendOptString(b, `,"sessionKey":`, e.SessionKey)
	b = appendOptString(b, `,"agentId":`, e.AgentID)
	b = appendOptString(b, `,"sessionId":`, e.SessionID)
	b = appendOptString(b, `,"lane":`, e.Lane)
	b = appendOptString(b, `,"spawnedBy":`, e.SpawnedBy)
	b = append(b, `,"isHeartbeat":`...)
	b = strconv.AppendBool(b, e.IsHeartbeat)
	return append(b, '}')
}

// SizeHint is how many bytes AppendJSON appends for e at most when its
// strings need no escaping (each of its two numbers counted at 20 digits),
// for a buffer made to size.
func (e *AgentEvent) SizeHint() int {
	n := len(`{"runId":,"seq":,"stream":,"ts":,"data":,"isHeartbeat":false}`) + 2*2 + 2*20
	n += len(e.RunID) + len(e.Stream) + max(len(e.Data), len("null"))
	for _, opt := range [...]struct{ name, s string }{{`,"sessionKey":`, e.SessionKey}, {`,"agentId":`, e.AgentID},
		{`,"sessionId":`, e.SessionID}, {`,"lane":`, e.Lane}, {`,"spawnedBy":`, e.SpawnedBy}} {
		if opt.s != "" {
			n += len(opt.name) + 2 + len(opt.s)
		}
	}
	return n
}

// AppendJSON appends e as json.Marshal encodes it. Message and Usage must
// be compact JSON as json.Marshal writes it.
func (e *ChatEvent) AppendJSON(b []byte) []byte {
	b = append(b, `{"runId":`...)
	b = appendHTMLString(b, e.RunID)
	b = append(b, `,"sessionKey":`...)
	b = appendHTMLString(b, e.SessionKey)
	b = appendOptString(b, `,"agentId":`, e.AgentID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"state":`...)
	b = appendHTMLString(b, e.State)
	b = appendOptString(b, `,"spawnedBy":`, e.SpawnedBy)
	b = appendOptString(b, `,"deltaText":`, e.DeltaText)
	if len(e.Message) > 0 {
		b = append(append(b, `,"message":`...), e.Message...)
	}
	if len(e.Usage) > 0 {
		b = append(append(b, `,"usage":`...), e.Usage...)
	}
	b = appendOptString(b, `,"stopReason":`, e.StopReason)
	b = appendOptString(b, `,"errorMessage":`, e.ErrorMessage)
	b = appendOptString(b, `,"errorKind":`, e.ErrorKind)
	return append(b, '}')
}

// appendOptString appends name and s unless s is empty (omitempty).
func appendOptString(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendHTMLString(append(b, name...), s)
}

func appendRaw(b []byte, raw json.RawMessage) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendHTMLString appends s as a JSON string as json.Marshal writes it:
// with <, > and & escaped too (as \u003c, \u003e and \u0026, in place).
func appendHTMLString(b []byte, s string) []byte {
	start := len(b)
	b = jsonenc.AppendString(b, s)
	n := 0
	for _, c := range b[start:] {
		if c == '<' || c == '>' || c == '&' {
			n++
		}
	}
	if n == 0 {
		return b
	}
	end := len(b)
	b = append(b, make([]byte, 5*n)...)
	i := len(b)
	for j := end - 1; j >= start; j-- { // from the end, as each escape widens
		switch c := b[j]; c {
		case '<', '>', '&':
			i -= 6
			copy(b[i:], `\u00`)
			b[i+4], b[i+5] = hexDigits[c>>4], hexDigits[c&0xf]
		default:
			i--
			b[i] = c
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// The data of a run's lifecycle agent events, written as json.Marshal
// writes the map of their members (keys in sorted order).

// AppendStartData appends the data of a run's start event:
// {"phase":"start","startedAt":startedAt}.
func AppendStartData(b []byte, startedAt int64) []byte {
	b = append(b, `{"phase":"start","startedAt":`...)
	b = strconv.AppendInt(b, startedAt, 10)
	return append(b, '}')
}

// AppendModelData appends the data of a run's model event:
// {"model":model,"phase":"model","provider":provider}.
func AppendModelData(b []byte, provider, model string) []byte {
	b = append(b, `{"model":`...)
	b = appendHTMLString(b, model)
	b = append(b, `,"phase":"model","provider":`...)
	b = appendHTMLString(b, provider)
	return append(b, '}')
}

// EndData is the data of a run's end event.
type EndData struct {
	// Phase is "end", or "error" for a run that failed (with Error).
	Phase      string
	StopReason string
	Aborted    bool
	// StartedAt and EndedAt are Unix milliseconds, written when the
	// matching Has flag is set.
	StartedAt, EndedAt       int64
	HasStartedAt, HasEndedAt bool
	// Error is written when HasError is set.
	Error    string
	HasError bool
}

// AppendJSON appends d as json.Marshal writes the map of its members.
func (d *EndData) AppendJSON(b []byte) []byte {
	b = append(b, `{"aborted":`...)
	b = strconv.AppendBool(b, d.Aborted)
	if d.HasEndedAt {
		b = append(b, `,"endedAt":`...)
		b = strconv.AppendInt(b, d.EndedAt, 10)
	}
	if d.HasError {
		b = append(b, `,"error":`...)
		b = appendHTMLString(b, d.Error)
	}
	b = append(b, `,"phase":`...)
	b = appendHTMLString(b, d.Phase)
	if d.HasStartedAt {
		b = append(b, `,"startedAt":`...)
		b = strconv.AppendInt(b, d.StartedAt, 10)
	}
	b = append(b, `,"stopReason":`...)
	b = appendHTMLString(b, d.StopReason)
	return append(b, '}')
}
