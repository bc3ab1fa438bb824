package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// runStream is the gateway's per-run state for turning runner events into
// chat and agent events.
type runStream struct {
	// mu guards the fields that follow; it is held while the run's events
	// are broadcast so that they go out in order.
	mu sync.Mutex
	// holds counts handlers that have not yet queued their response for
	// this run; while it is positive, events are held back so that a
	// client sees chat.send's or agent's answer before the run's events.
	holds int
	// held are the run's events not yet queued on the connections: those
	// of the runner event being translated (queued together at its end,
	// each connection's share under one lock and with one wake-up), and
	// all of them while holds is positive.
	held []heldEvent
	// frames is the scratch list a batch of held events is fanned out from.
	frames []outFrame
	// Room for the held events and frames of a runner event: its end
	// sends four (the assistant's text, the chat delta, the lifecycle end
	// and the chat final).
	heldRoom  [4]heldEvent
	frameRoom [4]outFrame
	ended     bool
	key       string // the run's session key: who receives its events

	// Chat delta throttling for the current model turn.
	text       string // cumulative text of the turn
	sent       int    // bytes of text already sent as deltas
	pendingSeq int64  // seq of the newest unsent delta, 0 when none
	lastDelta  time.Time

	// Agent assistant events are coalesced the same way: agentSent bytes
	// of text went out; the newest unsent event, if any (agentPending),
	// had seq agentSeq and text agentText.
	agentSent    int
	agentPending bool
	agentSeq     int64
	agentText    string
	lastAgent    time.Time

	// data is where an event's data or message is encoded before it is
	// copied into the event's frame: it is reused by the run's next event.
	data []byte
}

// MaxLiveText bounds the cumulative assistant text a delta event carries
// (the reference's 500000-character live buffer): past it, events carry
// the text's end. The run's message itself is never cut; only the live
// previews are, so one huge reply cannot flood every client.
const MaxLiveText = 500_000

// liveText returns the last MaxLiveText bytes of text, cut at a rune start.
// headText is text cut to at most n bytes at a rune boundary, from its
// start (a preview, where liveText keeps the newest end).
func headText(text string, n int) string {
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

func liveText(text string) string {
	if len(text) <= MaxLiveText {
		return text
	}
	i := len(text) - MaxLiveText
	for i < len(text) && !utf8.RuneStart(text[i]) {
		i++
	}
	return text[i:]
}

type heldEvent struct {
	name    string
	payload json.RawMessage
}

// stream returns the run's state, creating it.
func (s *Server) stream(runID string) *runStream {
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	st := s.runs[runID]
	if st == nil {
		// Room for a short turn's event data and final message, which
		// grew it two or three times.
		st = &runStream{data: make([]byte, 0, 512)}
		st.held, st.frames = st.heldRoom[:0], st.frameRoom[:0]
		s.runs[runID] = st
		s.liveRuns.Store(int64(len(s.runs)))
	}
	return st
}

// holdRun holds back the run's events until releaseRun. Call it before
// submitting a run whose id a response is about to announce.
func (s *Server) holdRun(runID string) {
	st := s.stream(runID)
	st.mu.Lock()
	st.holds++
	st.mu.Unlock()
}

// releaseRun sends the run's held events. terminal says the run had ended
// before the hold (a repeated idempotency key): it will emit nothing more.
func (s *Server) releaseRun(runID string, terminal bool) {
	s.runsMu.Lock()
	st := s.runs[runID]
	s.runsMu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.holds--
	if st.holds == 0 {
		s.flushHeldLocked(st)
	}
	done := st.holds == 0 && (st.ended || terminal)
	st.mu.Unlock()
	if done {
		s.dropStream(runID, st)
	}
}

func (s *Server) dropStream(runID string, st *runStream) {
	s.runsMu.Lock()
	if s.runs[runID] == st {
		delete(s.runs, runID)
		s.liveRuns.Store(int64(len(s.runs)))
	}
	s.runsMu.Unlock()
}

// emitLocked holds an encoded event of the run until flushHeldLocked: at
// the end of the runner event it belongs to, or when the last hold is
// released. st.mu is held.
func (s *Server) emitLocked(st *runStream, name string, b json.RawMessage) {
	st.held = append(st.held, heldEvent{name, b})
}

// runChangedLocked is runChanged after the run's events so far are
// queued (unless they are held). st.mu is held.
func (s *Server) runChangedLocked(st *runStream, key, runID, reason, phase string, final bool) {
	if st.holds == 0 {
		s.flushHeldLocked(st)
	}
	s.runChanged(key, runID, reason, phase, final)
}

// flushHeldLocked queues the run's held events, in order, on every
// connection that receives its session's events. st.mu is held.
func (s *Server) flushHeldLocked(st *runStream) {
	if len(st.held) == 0 {
		return
	}
	frames := st.frames[:0]
	for _, ev := range st.held {
		frames = append(frames, outFrame{raw: eventHead(ev.name, ev.payload != nil), body: ev.payload})
	}
	s.fanOutSession(st.key, frames, false)
	clear(frames)
	clear(st.held)
	st.frames, st.held = frames[:0], st.held[:0]
}

// onRunEvent is the runner subscription. It runs on the run's goroutine
// and never blocks: broadcasting only queues frames.
func (s *Server) onRunEvent(ev agent.Event) {
	s.sendTimingEvent(ev)
	s.wakeEnded(ev)
	if ev.Stream == agent.StreamPost {
		s.broadcastPost(ev)
		return
	}
	if ev.IsRemote() && s.skipRelayed(ev) {
		return
	}
	st := s.stream(ev.RunID)
	st.mu.Lock()
	if st.key == "" {
		st.key = ev.SessionKey
	}
	s.translateLocked(st, ev)
	if st.holds == 0 {
		s.flushHeldLocked(st)
	}
	end := ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd
	if end {
		st.ended = true
	}
	drop := end && st.holds == 0
	st.mu.Unlock()
	if drop {
		s.dropStream(ev.RunID, st)
	}
}

func (s *Server) translateLocked(st *runStream, ev agent.Event) {
	ts := ev.Time.UnixMilli()
	// agentEv emits an agent event of ev with data, encoded already (in
	// st.data, or by marshalData).
	agentEv := func(data json.RawMessage) { s.agentEventLocked(st, &ev, ev.Seq, ev.Stream, ts, data) }
	switch ev.Stream {
	case agent.StreamLifecycle:
		switch ev.Phase {
		case agent.PhaseQueued:
			// Accepted input waiting for the session: every client of the
			// session sees it (chat.history lists it in pendingInputs).
			if q := ev.Queue; q != nil {
				agentEv(marshalData(map[string]any{"phase": "queued", "position": q.Position, "queueMode": q.Mode,
					"message": headText(q.Message, MaxLiveText), "acceptedAt": ts}))
			}
		case agent.PhaseStart:
			st.data = wire.AppendStartData(st.data[:0], ts)
			agentEv(st.data)
			s.runChangedLocked(st, ev.SessionKey, ev.RunID, "agent.run.started", "start", false)
		case agent.PhaseModel:
			s.flushAgentTextLocked(st, &ev, ts)
			s.flushDeltaLocked(st, &ev)
			st.text, st.sent, st.agentSent = "", 0, 0
			st.data = wire.AppendModelData(st.data[:0], ev.ProviderID, ev.ModelID)
			agentEv(st.data)
			s.runChangedLocked(st, ev.SessionKey, ev.RunID, "", "", false) // the previous turn is stored
		case agent.PhaseEnd:
			s.flushAgentTextLocked(st, &ev, ts)
			s.flushDeltaLocked(st, &ev)
			s.endLocked(st, &ev, ts)
		}
	case agent.StreamAssistant:
		st.text = ev.Text
		st.pendingSeq = ev.Seq
		st.agentPending, st.agentSeq, st.agentText = true, ev.Seq, ev.Text
		now := s.now()
		iv := s.cfg.ChatDeltaInterval
		if iv < 0 || st.lastAgent.IsZero() || now.Sub(st.lastAgent) >= iv {
			s.flushAgentTextLocked(st, &ev, ts)
		}
		if iv < 0 || st.lastDelta.IsZero() || now.Sub(st.lastDelta) >= iv {
			s.flushDeltaLocked(st, &ev)
		}
	case agent.StreamTool:
		s.flushAgentTextLocked(st, &ev, ts)
		s.flushDeltaLocked(st, &ev)
		if ev.Tool == nil {
			return
		}
		agentEv(marshalData(toolData(ev)))
		if ev.Phase == agent.PhaseResult {
			s.runChangedLocked(st, ev.SessionKey, ev.RunID, "", "", false) // the call and its result are stored
		}
	case agent.StreamCompaction:
		s.flushAgentTextLocked(st, &ev, ts)
		s.flushDeltaLocked(st, &ev)
		agentEv(marshalData(compactionData(ev)))
	case agent.StreamUsage:
		s.flushAgentTextLocked(st, &ev, ts)
		if u := ev.Usage; u != nil {
			st.data = appendUsageData(st.data[:0], u)
			agentEv(st.data)
		}
	}
}

// agentEventLocked emits an agent event of ev's run with seq, stream and
// data (compact JSON as json.Marshal writes it), stamped ts. The frame is
// a copy: data may be st.data, which the next event reuses.
func (s *Server) agentEventLocked(st *runStream, ev *agent.Event, seq int64, stream string, ts int64, data json.RawMessage) {
	ae := wire.AgentEvent{
		RunID: ev.RunID, Seq: seq, Stream: stream, TS: ts, Data: data,
		SessionKey: ev.SessionKey, AgentID: ev.AgentID, SessionID: ev.SessionID,
		Lane: ev.Lane, SpawnedBy: ev.SpawnedBy,
	}
	s.emitLocked(st, wire.EventAgent, ae.AppendJSON(make([]byte, 0, ae.SizeHint())))
}

// marshalData is json.Marshal(data) for an agent event's data, {} when it
// cannot be encoded.
func marshalData(data any) json.RawMessage {
	raw, err := json.Marshal(data)
	if err != nil {
		return json.RawMessage("{}")
	}
	return raw
}

// toolData is the data of a "tool" agent event (ev.Tool set): the call's
// arguments at its start, its result at its end.
func toolData(ev agent.Event) map[string]any {
	data := map[string]any{"phase": ev.Phase, "name": ev.Tool.Name, "toolCallId": ev.Tool.CallID}
	if ev.Phase == agent.PhaseStart {
		data["args"] = rawOrEmpty(ev.Tool.Args)
	} else if res := ev.Tool.Result; res != nil {
		data["isError"] = res.IsError
		data["result"] = map[string]any{
			"content": []any{map[string]any{"type": "text", "text": res.Text}},
			"details": res.Details,
		}
	}
	return data
}

// usageData is the data of a "usage" agent event.
func usageData(u *transcript.Usage) map[string]any {
	data := map[string]any{"inputTokens": u.Input, "outputTokens": u.Output, "totalTokens": u.TotalTokens}
	if u.CacheRead != 0 {
		data["cacheReadTokens"] = u.CacheRead
	}
	if u.CacheWrite != 0 {
		data["cacheWriteTokens"] = u.CacheWrite
	}
	return data
}

// compactionData is the data of a "compaction" agent event, as the
// reference sends it: {phase: "start"}, then {phase: "end", completed,
// willRetry, outcome, reason?} (plus Switchboard's trigger and token
// counts).
func compactionData(ev agent.Event) map[string]any {
	data := map[string]any{"phase": ev.Phase}
	c := ev.Compaction
	if c == nil {
		return data
	}
	data["trigger"] = c.Reason
	if ev.Phase != agent.PhaseEnd {
		return data
	}
	data["completed"], data["willRetry"], data["outcome"] = c.Completed, c.WillRetry, c.Outcome
	if c.Error != "" {
		data["reason"] = c.Error
	}
	if c.Completed {
		data["tokensBefore"], data["tokensAfter"] = c.TokensBefore, c.TokensAfter
	}
	return data
}

// flushAgentTextLocked sends the newest held assistant event with the text
// that arrived since the last one as its delta (and the live text, capped,
// as its text), with the held event's seq, as an event of ev's run
// stamped ts.
func (s *Server) flushAgentTextLocked(st *runStream, ev *agent.Event, ts int64) {
	if !st.agentPending {
		return
	}
	text := st.agentText
	st.agentPending, st.agentText = false, ""
	delta := ""
	if st.agentSent < len(text) {
		delta = text[st.agentSent:]
	}
	st.agentSent = len(text)
	st.lastAgent = s.now()
	if len(delta) > MaxLiveText {
		delta = liveText(delta)
	}
	st.data = appendAgentText(st.data[:0], liveText(text), delta)
	s.agentEventLocked(st, ev, st.agentSeq, agent.StreamAssistant, ts, st.data)
}

// agentTextData is an assistant event's data.
type agentTextData struct {
	Text  string `json:"text"`
	Delta string `json:"delta"`
}

// flushDeltaLocked sends the text not yet sent as a chat delta.
func (s *Server) flushDeltaLocked(st *runStream, ev *agent.Event) {
	if st.pendingSeq == 0 || st.sent >= len(st.text) {
		st.pendingSeq = 0
		return
	}
	st.data = appendAssistantSoFar(st.data[:0], liveText(st.text), s.now())
	msg := st.data
	chat := wire.ChatEvent{
		RunID: ev.RunID, SessionKey: ev.SessionKey, AgentID: ev.AgentID, SpawnedBy: ev.SpawnedBy,
		Seq: st.pendingSeq, State: wire.ChatStateDelta, DeltaText: liveText(st.text[st.sent:]), Message: msg,
	}
	s.emitLocked(st, wire.EventChat, chat.AppendJSON(make([]byte, 0, len(msg)+len(chat.DeltaText)+256)))
	st.sent = len(st.text)
	st.pendingSeq = 0
	st.lastDelta = s.now()
}

// appendAssistantSoFar appends assistantSoFar(text, now) to b as
// json.Marshal writes it (keys sorted, <, > and & escaped), without
// building the map: a delta goes out on every turn.
func appendAssistantSoFar(b []byte, text string, now time.Time) []byte {
	if strings.ContainsAny(text, "<>&") {
		msg, _ := json.Marshal(assistantSoFar(text, now))
		return append(b, msg...)
	}
	b = append(b, `{"content":[{"text":`...)
	b = jsonenc.AppendString(b, text)
	b = append(b, `,"type":"`+transcript.BlockText+`"}],"role":"`+transcript.RoleAssistant+`","timestamp":`...)
	return append(strconv.AppendInt(b, now.UnixMilli(), 10), '}')
}

// assistantSoFar is the message a chat delta carries.
func assistantSoFar(text string, now time.Time) map[string]any {
	return map[string]any{
		"role":      transcript.RoleAssistant,
		"content":   []any{map[string]any{"type": transcript.BlockText, "text": text}},
		"timestamp": now.UnixMilli(),
	}
}

// endLocked emits lifecycle end (or error) and the chat final, aborted or
// error event of a finished run.
func (s *Server) endLocked(st *runStream, ev *agent.Event, ts int64) {
	run := ev.Run
	if run == nil {
		return
	}
	data := wire.EndData{Phase: "end", StopReason: run.StopReason, Aborted: run.Status == store.RunAborted,
		HasStartedAt: !run.StartedAt.IsZero(), HasEndedAt: !run.EndedAt.IsZero()}
	if data.HasStartedAt {
		data.StartedAt = run.StartedAt.UnixMilli()
	}
	if data.HasEndedAt {
		data.EndedAt = run.EndedAt.UnixMilli()
	}
	if run.Status == store.RunError || run.Status == store.RunTimeout {
		data.Phase, data.Error, data.HasError = "error", run.Error, true
	}
	st.data = data.AppendJSON(st.data[:0])
	s.agentEventLocked(st, ev, ev.Seq, ev.Stream, ts, st.data)

	chat := wire.ChatEvent{
		RunID: ev.RunID, SessionKey: ev.SessionKey, AgentID: ev.AgentID, SpawnedBy: ev.SpawnedBy,
		Seq: ev.Seq, StopReason: run.StopReason,
	}
	// The message and the usage are encoded one after the other into
	// st.data, and sliced from it once both are in.
	st.data = st.data[:0]
	if ev.Message != nil {
		st.data, _ = appendMessageJSON(st.data, ev.Message)
	}
	msgEnd := len(st.data)
	switch run.Status {
	case store.RunOK:
		chat.State = wire.ChatStateFinal
		st.data = appendUsageJSON(st.data, run.Usage)
	case store.RunAborted:
		chat.State = wire.ChatStateAborted
		if chat.StopReason == "" {
			chat.StopReason = "aborted"
		}
	default:
		chat.State = wire.ChatStateError
		chat.ErrorMessage = run.Error
		chat.ErrorKind = "unknown"
		if run.Status == store.RunTimeout {
			chat.ErrorKind = "timeout"
		}
	}
	chat.Message, chat.Usage = st.data[:msgEnd], st.data[msgEnd:]
	s.emitLocked(st, wire.EventChat, chat.AppendJSON(make([]byte, 0, len(chat.Message)+len(chat.Usage)+256)))
	s.runChangedLocked(st, ev.SessionKey, ev.RunID, "lifecycle", "end", true)
}

func rawOrEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("{}")
	}
	return b
}

// broadcastPost shows a posted message (Runner.Post) to every client as a
// chat final event of the post's own id.
func (s *Server) broadcastPost(ev agent.Event) {
	raw, err := json.Marshal(ev.Message)
	if err != nil {
		return
	}
	b, err := json.Marshal(wire.ChatEvent{
		RunID: ev.RunID, SessionKey: ev.SessionKey, AgentID: ev.AgentID, State: wire.ChatStateFinal,
		StopReason: "stop", Message: raw,
	})
	if err != nil {
		return
	}
	s.broadcastSession(wire.EventChat, ev.SessionKey, b, false)
	s.runChanged(ev.SessionKey, ev.RunID, "", "", true)
}
