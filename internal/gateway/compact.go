package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/ctxmap"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Replies of the session commands, as the reference words them.
const (
	replyNew   = "✅ New session started."
	replyReset = "✅ Session reset."
)

// handleSessionsCompact compacts a session now, or with maxLines keeps only
// its last maxLines entries in the model's view.
func (s *Server) handleSessionsCompact(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsCompactParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
	if err := s.requireSession(ctx, key, p.Key); err != nil {
		return nil, err
	}
	out := wire.SessionsCompactResult{OK: true, Key: key}
	if p.MaxLines != nil {
		res, err := s.cfg.Runner.CompactRun(ctx, "compact-"+s.newID(), key, agent.CompactInput{MaxLines: p.MaxLines})
		if err != nil {
			return nil, err
		}
		out.Compacted, out.Kept, out.Reason = res.Compacted, &res.Kept, res.Reason
		return out, nil
	}
	res, err := s.manualCompact(ctx, key, "compact-"+s.newID(), "")
	if err != nil {
		return nil, wire.NewError(wire.CodeUnavailable, "compaction failed: "+err.Error())
	}
	out.Compacted, out.Reason = res.Compacted, res.Reason
	if res.Compacted {
		var details any
		_ = json.Unmarshal(res.Details, &details)
		out.Result = &wire.CompactDetail{TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter,
			Summary: res.Summary, FirstKeptEntryID: res.FirstKeptEntryID, Details: details}
	}
	return out, nil
}

// manualCompact runs a /compact or sessions.compact compaction, bracketed
// by "compaction" agent events under runID (trigger "manual") so that
// every client of the session can show it, as the runner does for
// automatic ones.
func (s *Server) manualCompact(ctx context.Context, key, runID, instructions string) (*agent.CompactResult, error) {
	emit := func(seq int64, data map[string]any) {
		raw, err := json.Marshal(data)
		if err != nil {
			return
		}
		b, err := json.Marshal(wire.AgentEvent{RunID: runID, Seq: seq, Stream: wire.StreamCompaction, TS: s.now().UnixMilli(), Data: raw, SessionKey: key})
		if err == nil {
			s.broadcastSession(wire.EventAgent, key, b, false)
		}
	}
	emit(1, map[string]any{"phase": agent.PhaseStart, "trigger": "manual"})
	res, err := s.cfg.Runner.CompactRun(ctx, runID, key, agent.CompactInput{Instructions: instructions})
	end := map[string]any{"phase": agent.PhaseEnd, "trigger": "manual", "completed": false, "willRetry": false, "outcome": "failed"}
	switch {
	case err != nil:
		end["reason"] = err.Error()
	case res.Compacted:
		end["completed"], end["outcome"], end["tokensBefore"], end["tokensAfter"] = true, "completed", res.TokensBefore, res.TokensAfter
	default:
		end["outcome"], end["reason"] = "skipped", res.Reason
	}
	emit(2, end)
	return res, err
}

// sessionCommand handles a /compact, /new or /reset chat message without
// a model turn (only /compact's summary call reaches a model). It returns
// the reply, and next: text that follows /new or /reset and runs as the
// session's first turn.
func (s *Server) sessionCommand(ctx context.Context, key, agentID, runID string, cmd compaction.Command) (reply, next string, err error) {
	if cmd.Kind == compaction.CmdContext {
		if _, err := s.cfg.Store.GetSession(ctx, key); errors.Is(err, store.ErrNotFound) {
			return reply, "", nil
		}
		rep, err := s.cfg.Runner.ContextReport(ctx, key)
		if err != nil {
			return "", "", err
		}
		in := Injection{SessionKey: key, Text: contextText(rep, cmd.Rest), IdempotencyKey: runID + ":reply", RunID: runID}
		if strings.EqualFold(strings.TrimSpace(cmd.Rest), "map") {
			img, err := contextMap(key, rep)
			if err != nil {
				return "", "", err
			}
			in.Text = "🗺️ Context map (area ∝ characters)\n" + compaction.ContextLine(rep.Total, rep.Window)
			in.Images = []transcript.Block{img}
		}
		if _, err := s.Inject(ctx, in); err != nil {
			return "", "", err
		}
		return in.Text, "", nil
	}
	if cmd.Kind == compaction.CmdCompact {
		if _, err := s.cfg.Store.GetSession(ctx, key); errors.Is(err, store.ErrNotFound) {
			return reply, "", nil // nothing to compact, nowhere to reply
		}
		r, err := s.manualCompact(ctx, key, runID, cmd.Rest)
		if err != nil {
			s.log.Warn("compaction failed", "sessionKey", key, "err", err)
			reply = "⚙️ Compaction failed: " + err.Error()
		} else {
			reply = compaction.CompactedReply(r.Compacted, r.Reason, r.TokensBefore, r.TokensAfter, r.Window)
		}
		if _, err := s.Inject(ctx, Injection{SessionKey: key, Text: reply, IdempotencyKey: runID + ":reply", RunID: runID}); err != nil {
			return "", "", err
		}
		return reply, "", nil
	}
	// Like sessions.reset, /new and /reset need operator.write (which
	// chat.send already required).
	rest, model := cmd.Rest, ""
	if cmd.Kind == compaction.CmdNew {
		if word, after, _ := strings.Cut(rest, " "); s.knownModel(word) {
			model, rest = word, strings.TrimSpace(after)
		}
	}
	reply = replyReset
	if cmd.Kind == compaction.CmdNew {
		reply = replyNew
	}
	if h := s.cfg.EventHook; h != nil {
		h(ctx, "command:"+cmd.Kind, map[string]any{"sessionKey": key, "agentId": agentID, "soft": cmd.Soft})
	}
	if !cmd.Soft {
		if _, err := s.resetSession(ctx, key, agentID, cmd.Kind, "", model); err != nil {
			return "", "", err
		}
	} else if _, err := s.cfg.Store.GetSession(ctx, key); errors.Is(err, store.ErrNotFound) {
		if _, err := s.resetSession(ctx, key, agentID, cmd.Kind, "", ""); err != nil {
			return "", "", err
		}
	}
	// With text after the command that text is the run under runID: the
	// reply then goes under no run id, so that a client waiting on the
	// send gets the run's answer, not this notice.
	replyRun := runID
	if rest != "" {
		replyRun = ""
	}
	if _, err := s.Inject(ctx, Injection{SessionKey: key, Text: reply, IdempotencyKey: runID + ":reply", RunID: replyRun}); err != nil {
		return "", "", err
	}
	return reply, rest, nil
}

// knownModel reports whether ref is a "<provider>/<model>" of a configured
// provider (or the offline one).
func (s *Server) knownModel(ref string) bool {
	prov, model := settings.SplitModelRef(ref)
	if prov == "" || model == "" || !strings.Contains(ref, "/") {
		return false
	}
	if prov == "scripted" {
		return true
	}
	return s.conf.HasProvider(prov)
}

// resetSession starts a fresh transcript for key (the old one stays
// stored, its id kept as previousSessionId) whose first entry is a
// {type: "reset", reason} entry, so chat.history shows a Reset row and the
// model gets nothing from before. Live runs of the session are aborted.
func (s *Server) resetSession(ctx context.Context, key, agentID, reason, expected, model string) (*store.Session, error) {
	if _, err := s.cfg.Runner.AbortSession(ctx, key); err != nil {
		return nil, err
	}
	if reason == "" {
		reason = compaction.CmdReset
	}
	var previous string
	sess, err := s.cfg.Store.UpdateSession(ctx, key, true, func(sess *store.Session) error {
		if expected != "" && sess.SessionID != expected {
			return errSessionChanged
		}
		if sess.CreatedAt.IsZero() {
			s.initSession(sess, agentID)
			sess.CreatedAt = s.now()
		}
		previous = sess.SessionID
		sess.SessionID = s.newID()
		sess.SystemSent = false
		sess.AbortedLastRun = false
		sess.InputTokens, sess.OutputTokens, sess.TotalTokens, sess.ContextTokens = 0, 0, 0, 0
		if model != "" {
			sess.Model = model
		}
		sess.Extra = setExtra(sess.Extra, "previousSessionId", previous)
		sess.Extra = setExtra(sess.Extra, "compactionCount", nil)
		sess.Extra = setExtra(sess.Extra, "sessionStartedAt", s.now().UnixMilli())
		sess.UpdatedAt = s.now()
		return nil
	})
	if err != nil {
		return nil, err
	}
	e := transcript.Entry{Type: transcript.TypeReset, Timestamp: transcript.FormatTime(s.now()), Extra: map[string]json.RawMessage{}}
	e.Extra["reason"], _ = json.Marshal(reason)
	if previous != "" {
		e.Extra["previousSessionId"], _ = json.Marshal(previous)
	}
	if _, err := s.cfg.Store.AppendMessages(ctx, sess.SessionID, []store.Message{{SessionID: sess.SessionID, Entry: e}}); err != nil {
		return nil, err
	}
	return sess, nil
}

// setExtra sets (or with a nil v removes) one member of a session's extra
// object.
func setExtra(raw json.RawMessage, name string, v any) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	if v == nil || v == "" {
		delete(m, name)
	} else {
		m[name], _ = json.Marshal(v)
	}
	if len(m) == 0 {
		return nil
	}
	out, _ := json.Marshal(m)
	return out
}

// boundaryRow is chat.history's synthetic row for a compaction or reset
// entry: {role: "system", content: [{type: "text", text: "Compaction"}],
// __openclaw: {id, seq, kind, …}}. ok is false for other entries.
func boundaryRow(m store.Message) (json.RawMessage, bool) {
	var text, kind string
	switch m.Entry.Type {
	case transcript.TypeCompaction:
		text, kind = "Compaction", "compaction"
	case transcript.TypeReset:
		text, kind = "Reset", "reset"
	default:
		return nil, false
	}
	meta := map[string]any{"id": m.Entry.ID, "seq": m.Seq, "kind": kind}
	for _, k := range []string{"tokensBefore", "tokensAfter", "reason", "firstKeptEntryId"} {
		if v, ok := m.Entry.Extra[k]; ok {
			meta[k] = v
		}
	}
	row := map[string]any{
		"role":       "system",
		"content":    []map[string]string{{"type": "text", "text": text}},
		"__openclaw": meta,
	}
	if ts, err := time.Parse(time.RFC3339Nano, m.Entry.Timestamp); err == nil {
		row["timestamp"] = ts.UnixMilli()
	}
	b, err := json.Marshal(row)
	return b, err == nil
}

// contextText formats a /context report: "json" as a JSON object, "detail"
// with every tool name, otherwise ("list") the summary lines.
func contextText(r *agent.ContextReport, mode string) string {
	if strings.EqualFold(strings.TrimSpace(mode), "json") {
		b, _ := json.MarshalIndent(r, "", "  ")
		return string(b)
	}
	detail := strings.EqualFold(strings.TrimSpace(mode), "detail")
	var b strings.Builder
	b.WriteString("🧠 Context breakdown")
	if detail {
		b.WriteString(" (detailed)")
	}
	fmt.Fprintf(&b, "\nModel: %s • window %s • compacts at %s", r.Model, compaction.FormatTokens(r.Window), compaction.FormatTokens(r.Threshold))
	fmt.Fprintf(&b, "\nSystem prompt (run): %s chars (~%s tok)", commas(r.SystemChars), commas(r.SystemTokens))
	tools := r.Tools
	if !detail && len(tools) > 8 {
		tools = append(append([]string(nil), tools[:8]...), "…")
	}
	if len(tools) > 0 {
		fmt.Fprintf(&b, "\nTools: %s", strings.Join(tools, ", "))
	}
	fmt.Fprintf(&b, "\nTool schemas (JSON): %s chars (~%s tok) (counts toward context; not shown as text)", commas(r.ToolChars), commas(r.ToolTokens))
	if r.SummaryChars > 0 {
		fmt.Fprintf(&b, "\nCompaction summary: %s chars (~%s tok)", commas(r.SummaryChars), commas(r.SummaryTokens))
	}
	fmt.Fprintf(&b, "\nHistory: %d messages, %s chars (~%s tok)", r.Messages, commas(r.HistoryChars), commas(r.HistoryTokens))
	if detail {
		fmt.Fprintf(&b, "\nEstimate calibration: ×%.2f of characters/4", r.Calibration)
	}
	b.WriteString("\n" + compaction.ContextLine(r.Total, r.Window))
	return b.String()
}

// contextMap draws the /context map picture: a treemap of the report's
// contributors, by characters.
func contextMap(key string, r *agent.ContextReport) (transcript.Block, error) {
	note := func(chars, tok int) string { return commas(chars) + " chars (~" + commas(tok) + " tok)" }
	b, err := ctxmap.PNG("Context of "+key+" - "+r.Model, []ctxmap.Tile{
		{Label: fmt.Sprintf("History (%d messages)", r.Messages), Size: r.HistoryChars, Note: note(r.HistoryChars, r.HistoryTokens)},
		{Label: "Tool schemas", Size: r.ToolChars, Note: note(r.ToolChars, r.ToolTokens)},
		{Label: "System prompt", Size: r.SystemChars, Note: note(r.SystemChars, r.SystemTokens)},
		{Label: "Compaction summary", Size: r.SummaryChars, Note: note(r.SummaryChars, r.SummaryTokens)},
	})
	if err != nil {
		return transcript.Block{}, err
	}
	return transcript.Block{Type: transcript.BlockImage, Data: base64.StdEncoding.EncodeToString(b), MimeType: "image/png"}, nil
}

// commas formats n with thousands separators.
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// requireSession answers the reference's "No session found: <key as
// typed>" when key has no session.
func (s *Server) requireSession(ctx context.Context, key, asTyped string) error {
	if _, err := s.cfg.Store.GetSession(ctx, key); errors.Is(err, store.ErrNotFound) {
		return invalid("No session found: " + asTyped)
	} else if err != nil {
		return err
	}
	return nil
}
