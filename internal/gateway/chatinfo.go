package gateway

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
)

// infoCommand answers /help and /status without a model turn: the reply
// is recorded in the session (which admission made sure exists) under
// the command's run id.
func (s *Server) infoCommand(ctx context.Context, cmd admission.Command) (string, error) {
	reply := helpText(chatCommands)
	if cmd.Session.Kind == compaction.CmdStatus {
		st, err := s.chatStatus(ctx, cmd)
		if err != nil {
			return "", err
		}
		reply = statusText(st)
	}
	if err := s.Reply(ctx, cmd.SessionKey, cmd.RunID, reply); err != nil {
		return "", err
	}
	return reply, nil
}

// helpText is the /help answer: every chat command, grouped by its
// category, with its description.
func helpText(cmds []wire.ChatCommand) string {
	var b strings.Builder
	b.WriteString("ℹ️ Help")
	for _, cat := range []struct{ key, label string }{{"session", "Session"}, {"status", "Status"}, {"options", "Options"}} {
		first := true
		for _, c := range cmds {
			if c.Category != cat.key {
				continue
			}
			if first {
				b.WriteString("\n\n" + cat.label)
				first = false
			}
			fmt.Fprintf(&b, "\n  /%s — %s", c.Name, c.Description)
		}
	}
	b.WriteString("\n\nAnything else is a message to the agent.")
	return b.String()
}

// chatStatus is what /status reports about one session.
type chatStatus struct {
	Version string
	Uptime  time.Duration
	// Model is "<provider>/<model>"; Window its context window in tokens
	// (0 unknown) and Context the estimate of the next turn's prompt.
	Model           string
	ModelErr        string // why the model did not resolve ("" when it did)
	Window, Context int
	// Input and Output are the session's token totals.
	Input, Output int64
	Compactions   int64
	Key, ID       string
	Agent         string
	Updated       time.Duration // since the session last changed
	SendPolicy    string        // "allow", "deny" or "" (inherit)
	Thinking      string
	Queue         policy.QueueSettings
	// Busy says a run of the session runs (not /status itself), Running
	// for how long; Queued counts the messages waiting.
	Busy    bool
	Running time.Duration
	Queued  int
}

// chatStatus gathers /status's figures for cmd's session.
func (s *Server) chatStatus(ctx context.Context, cmd admission.Command) (chatStatus, error) {
	sess, err := s.cfg.Store.GetSession(ctx, cmd.SessionKey)
	if err != nil {
		return chatStatus{}, fmt.Errorf("gateway: /status: %w", err)
	}
	now := s.now()
	st := chatStatus{
		Version: s.cfg.Version, Uptime: now.Sub(s.started),
		Input: sess.InputTokens, Output: sess.OutputTokens, Compactions: agent.CompactionCount(sess),
		Key: sess.Key, ID: sess.SessionID, Agent: sess.AgentID, SendPolicy: sess.SendPolicy, Thinking: sess.ThinkingLevel,
	}
	if !sess.UpdatedAt.IsZero() {
		st.Updated = now.Sub(sess.UpdatedAt)
	}
	if cmd.Queue != nil {
		st.Queue = *cmd.Queue
	}
	runs, err := s.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: cmd.SessionKey, Statuses: []store.RunStatus{store.RunRunning, store.RunQueued}})
	if err != nil {
		return chatStatus{}, fmt.Errorf("gateway: /status: %w", err)
	}
	for _, r := range runs {
		switch {
		case r.Status == store.RunQueued:
			st.Queued++
		case r.RunID != cmd.RunID:
			st.Busy = true
			if !r.StartedAt.IsZero() {
				st.Running = now.Sub(r.StartedAt)
			}
		}
	}
	// A model that does not resolve is what /status is asked about most:
	// it is reported, not answered with an error.
	if rep, err := s.cfg.Runner.ContextReport(ctx, cmd.SessionKey); err != nil {
		st.Model, st.ModelErr = cmp.Or(sess.Model, "the agent's default"), err.Error()
	} else {
		st.Model, st.Window, st.Context = rep.Model, rep.Window, rep.Total
	}
	return st, nil
}

// statusText is the /status answer.
func statusText(st chatStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "🔀 Switchboard %s · up %s", st.Version, roughDuration(st.Uptime))
	fmt.Fprintf(&b, "\n🧠 Model: %s", st.Model)
	if st.Thinking != "" {
		fmt.Fprintf(&b, " · thinking %s", st.Thinking)
	}
	if st.ModelErr != "" {
		fmt.Fprintf(&b, " · ⚠️ %s", st.ModelErr)
	}
	fmt.Fprintf(&b, "\n🧮 Tokens: %s in / %s out", compaction.FormatTokens(int(st.Input)), compaction.FormatTokens(int(st.Output)))
	if st.ModelErr != "" {
		b.WriteString("\n📚 Context ?")
	} else {
		fmt.Fprintf(&b, "\n📚 %s", compaction.ContextLine(st.Context, st.Window))
	}
	if st.Compactions > 0 {
		fmt.Fprintf(&b, " · 🧹 Compactions: %d", st.Compactions)
	}
	fmt.Fprintf(&b, "\n🧵 Session: %s (agent %s, transcript %s)", st.Key, st.Agent, st.ID)
	if st.Updated > 0 {
		fmt.Fprintf(&b, " · updated %s ago", roughDuration(st.Updated))
	}
	q := st.Queue
	fmt.Fprintf(&b, "\n🪢 Queue: %s", cmp.Or(string(q.Mode), "default"))
	if q.DebounceMs > 0 {
		fmt.Fprintf(&b, " · debounce %dms", q.DebounceMs)
	}
	if q.Cap > 0 {
		fmt.Fprintf(&b, " · cap %d", q.Cap)
		if q.Drop != "" {
			fmt.Fprintf(&b, " (drop %s)", q.Drop)
		}
	}
	switch {
	case st.Busy:
		fmt.Fprintf(&b, "\n🏃 Run: running for %s · %d waiting (/stop ends it)", roughDuration(st.Running), st.Queued)
	case st.Queued > 0:
		fmt.Fprintf(&b, "\n🏃 Run: idle · %d waiting", st.Queued)
	default:
		b.WriteString("\n🏃 Run: idle")
	}
	fmt.Fprintf(&b, "\n📨 Send policy: %s", cmp.Or(st.SendPolicy, "inherit"))
	return b.String()
}

// roughDuration writes d in its two largest units ("2h 5m", "3d", "12s";
// "0s" under a second).
func roughDuration(d time.Duration) string {
	units := []struct {
		name string
		secs int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}}
	s := max(int64(d/time.Second), 0)
	for i, u := range units {
		n := s / u.secs
		if n == 0 {
			continue
		}
		out := fmt.Sprintf("%d%s", n, u.name)
		if i+1 < len(units) {
			if m := s % u.secs / units[i+1].secs; m > 0 {
				out += fmt.Sprintf(" %d%s", m, units[i+1].name)
			}
		}
		return out
	}
	return "0s"
}
