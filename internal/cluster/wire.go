package cluster

import (
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// An event's JSON in a frame is wireEvent: the fields of agent.Event that
// are set, without the run id, session key and number its header line
// carries already (and, in the current format SBR4, without its identity:
// session id, agent, lane and spawner, which the header carries once per
// run), and times as unix nanoseconds. An end's run record is wireRun,
// without the ids it shares with its event. Every other node decodes each
// end it is sent, and each node's listener receives every frame: the SBR2
// form (agent.Event's JSON, every field written, the ids three times) made
// a warm turn's events 3.5 KB, SBR3 about half, SBR4 (no run input, the
// identity once) about 1.1 KB. TestWireEventKeepsEveryField checks that
// every field of agent.Event and store.Run goes through.
type wireEvent struct {
	SessionID  string                 `json:"sid,omitempty"`
	AgentID    string                 `json:"agent,omitempty"`
	Lane       string                 `json:"lane,omitempty"`
	SpawnedBy  string                 `json:"by,omitempty"`
	SessionSeq int64                  `json:"sseq,omitempty"`
	Time       *int64                 `json:"t,omitempty"`
	Stream     string                 `json:"stream,omitempty"`
	Phase      string                 `json:"phase,omitempty"`
	Text       string                 `json:"text,omitempty"`
	Delta      string                 `json:"delta,omitempty"`
	ProviderID string                 `json:"provider,omitempty"`
	ModelID    string                 `json:"model,omitempty"`
	Tool       *agent.ToolEvent       `json:"tool,omitempty"`
	Queue      *agent.QueueEvent      `json:"queue,omitempty"`
	Usage      *transcript.Usage      `json:"usage,omitempty"`
	Compaction *agent.CompactionEvent `json:"compaction,omitempty"`
	Run        *wireRun               `json:"run,omitempty"`
	Message    *transcript.Message    `json:"msg,omitempty"`
}

// wireRun is an end's store.Run in a frame. Same says which of the run's
// ids are its event's (and so left out): sameRunID and the like. The run's
// Input is not relayed: it is the run's whole input (its message, images,
// client tools), a third of a warm turn's end, which every other node
// would decode and no consumer of a relayed end reads (the event log drops
// it, see agent's logRun; who needs it reads the run from the store).
// Input stays in the struct so that a frame of a node of the version
// before, which carries it, still reads.
type wireRun struct {
	Same       uint8            `json:"same,omitempty"`
	RunID      string           `json:"id,omitempty"`
	SessionKey string           `json:"key,omitempty"`
	SessionID  string           `json:"sid,omitempty"`
	AgentID    string           `json:"agent,omitempty"`
	Lane       string           `json:"lane,omitempty"`
	Status     store.RunStatus  `json:"status,omitempty"`
	Input      json.RawMessage  `json:"input,omitempty"`
	CreatedAt  *int64           `json:"created,omitempty"`
	StartedAt  *int64           `json:"started,omitempty"`
	EndedAt    *int64           `json:"ended,omitempty"`
	Error      string           `json:"error,omitempty"`
	StopReason string           `json:"stop,omitempty"`
	Usage      transcript.Usage `json:"usage"`
}

// Bits of wireRun.Same.
const (
	sameRunID = 1 << iota
	sameSessionKey
	sameSessionID
	sameAgentID
	sameLane
)

// toWire is ev as written in a frame.
func toWire(ev *agent.Event) wireEvent {
	w := wireEvent{
		SessionID: ev.SessionID, AgentID: ev.AgentID, Lane: ev.Lane, SpawnedBy: ev.SpawnedBy,
		SessionSeq: ev.SessionSeq, Time: nanos(ev.Time), Stream: ev.Stream, Phase: ev.Phase,
		Text: ev.Text, Delta: ev.Delta, ProviderID: ev.ProviderID, ModelID: ev.ModelID,
		Tool: ev.Tool, Queue: ev.Queue, Usage: ev.Usage, Compaction: ev.Compaction, Message: ev.Message,
	}
	if r := ev.Run; r != nil {
		wr := &wireRun{
			Status: r.Status, CreatedAt: nanos(r.CreatedAt), StartedAt: nanos(r.StartedAt),
			EndedAt: nanos(r.EndedAt), Error: r.Error, StopReason: r.StopReason, Usage: r.Usage,
		}
		wr.RunID = sameOr(&wr.Same, sameRunID, r.RunID, ev.RunID)
		wr.SessionKey = sameOr(&wr.Same, sameSessionKey, r.SessionKey, ev.SessionKey)
		wr.SessionID = sameOr(&wr.Same, sameSessionID, r.SessionID, ev.SessionID)
		wr.AgentID = sameOr(&wr.Same, sameAgentID, r.AgentID, ev.AgentID)
		wr.Lane = sameOr(&wr.Same, sameLane, r.Lane, ev.Lane)
		w.Run = wr
	}
	return w
}

// event is the agent.Event w stands for, with the header's run id,
// session key and number.
func (w *wireEvent) event(runID, sessionKey string, seq int64) agent.Event {
	ev := agent.Event{
		RunID: runID, SessionKey: sessionKey, SessionID: w.SessionID, AgentID: w.AgentID, Lane: w.Lane,
		SpawnedBy: w.SpawnedBy, Seq: seq, SessionSeq: w.SessionSeq, Time: fromNanos(w.Time),
		Stream: w.Stream, Phase: w.Phase, Text: w.Text, Delta: w.Delta, ProviderID: w.ProviderID, ModelID: w.ModelID,
		Tool: w.Tool, Queue: w.Queue, Usage: w.Usage, Compaction: w.Compaction, Message: w.Message,
	}
	if wr := w.Run; wr != nil {
		ev.Run = &store.Run{
			RunID:      pick(wr.Same, sameRunID, wr.RunID, ev.RunID),
			SessionKey: pick(wr.Same, sameSessionKey, wr.SessionKey, ev.SessionKey),
			SessionID:  pick(wr.Same, sameSessionID, wr.SessionID, ev.SessionID),
			AgentID:    pick(wr.Same, sameAgentID, wr.AgentID, ev.AgentID),
			Lane:       pick(wr.Same, sameLane, wr.Lane, ev.Lane),
			Status:     wr.Status, Input: wr.Input, CreatedAt: fromNanos(wr.CreatedAt), StartedAt: fromNanos(wr.StartedAt),
			EndedAt: fromNanos(wr.EndedAt), Error: wr.Error, StopReason: wr.StopReason, Usage: wr.Usage,
		}
	}
	return ev
}

// sameOr returns "" and sets bit in same when v is the event's value ev,
// else v.
func sameOr(same *uint8, bit uint8, v, ev string) string {
	if v == ev && v != "" {
		*same |= bit
		return ""
	}
	return v
}

// pick is the value sameOr wrote v for: the event's when bit is set.
func pick(same, bit uint8, v, ev string) string {
	if same&bit != 0 {
		return ev
	}
	return v
}

// nanos is t in unix nanoseconds; nil for the zero time.
func nanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// fromNanos is the time nanos wrote n for.
func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n)
}
