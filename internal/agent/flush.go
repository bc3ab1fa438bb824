package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// MemoryFlushConfig is the silent agent turn before a compaction that lets
// the agent write durable notes (agents.defaults.compaction.memoryFlush).
// The zero value is off.
type MemoryFlushConfig struct {
	Enabled bool
	// SoftThresholdTokens is the gap below the compaction threshold at
	// which the flush runs (default compaction.DefaultFlushSoftTokens).
	SoftThresholdTokens int
	// Prompt and SystemPrompt replace the reference's texts when set; the
	// safety and NO_REPLY hints are added to them when missing.
	Prompt, SystemPrompt string
	// Model is an exact "<provider>/<model>" for the flush turn only.
	Model string
	// Writable, when set, reports whether a run may write its workspace;
	// the flush is skipped for runs that may not (a sandbox mounting the
	// workspace read-only or not at all).
	Writable func(RunInfo) bool
}

// maxFlushSteps bounds the model calls of one memory flush.
const maxFlushSteps = 8

// flushTurn is what a memory flush needs of the run that triggers it: the
// run's system prompt, its own tools and the caller they act for.
type flushTurn struct {
	info   RunInfo
	system string
	defs   []provider.ToolDef
	tools  *tools.Set
	caller tools.Caller
}

// flushDue reports whether the session's memory flush of this compaction
// cycle has not run yet (the session row's memoryFlushCompactionCount
// trails its compactionCount).
func (r *Runner) flushDue(ctx context.Context, ft *flushTurn) bool {
	mf := &r.cfg.Compaction.MemoryFlush
	if !mf.Enabled || (mf.Writable != nil && !mf.Writable(ft.info)) {
		return false
	}
	sess, err := r.cfg.Store.GetSession(ctx, ft.info.SessionKey)
	if err != nil {
		return false
	}
	done, ok := extraInt(sess.Extra, "memoryFlushCompactionCount")
	count, _ := extraInt(sess.Extra, "compactionCount")
	return !ok || done < count
}

// flushThreshold is the projected prompt size at which the flush runs for
// model m.
func (r *Runner) flushThreshold(m Model) int {
	soft := r.cfg.Compaction.MemoryFlush.SoftThresholdTokens
	if soft == 0 {
		soft = compaction.DefaultFlushSoftTokens
	}
	return compaction.FlushThreshold(modelWindow(m).Tokens, r.cfg.Compaction.ReserveTokens, soft)
}

// memoryFlush runs the silent flush turn on a private copy of view: its
// prompts, replies and tool results never enter the transcript, and
// nothing of it is streamed; only what its tools write stays. It records
// the flush on the session row, so it runs once per compaction cycle. A
// failure is logged (and, with notifyUser, noticed) and changes nothing.
func (r *Runner) memoryFlush(ctx context.Context, st *runState, ft *flushTurn, m Model, view []provider.Message) {
	cc := &r.cfg.Compaction
	err := r.runFlush(ctx, ft, m, view)
	if err != nil {
		r.log.Warn("memory flush failed; continuing", "sessionKey", ft.info.SessionKey, "err", err)
		if cc.NotifyUser && st != nil {
			r.notice(st, compaction.NoticeFlushDegraded)
		}
		return
	}
	now := r.now()
	_, err = r.cfg.Store.UpdateSession(context.WithoutCancel(ctx), ft.info.SessionKey, false, func(s *store.Session) error {
		count, _ := extraInt(s.Extra, "compactionCount")
		s.Extra = setMember(s.Extra, "memoryFlushCompactionCount", count)
		s.Extra = setMember(s.Extra, "memoryFlushAt", now.UnixMilli())
		return nil
	})
	if err != nil {
		r.log.Warn("memory flush: record on session failed", "sessionKey", ft.info.SessionKey, "err", err)
	}
	r.log.Info("memory flush complete", "sessionKey", ft.info.SessionKey)
}

// runFlush is the flush's model↔tool loop.
func (r *Runner) runFlush(ctx context.Context, ft *flushTurn, m Model, view []provider.Message) error {
	cc := &r.cfg.Compaction
	fm := m
	if ref := cc.MemoryFlush.Model; ref != "" {
		var err error
		if fm, err = r.cfg.Models.ResolveModel(ft.info.AgentID, ref); err != nil {
			return fmt.Errorf("memory flush model %q: %w", ref, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cc.timeout())
	defer cancel()
	user, sys := compaction.FlushPrompts(cc.MemoryFlush.Prompt, cc.MemoryFlush.SystemPrompt, r.now(), nil)
	system := sys
	if ft.system != "" {
		system = ft.system + "\n\n" + sys
	}
	msgs := append(append(make([]provider.Message, 0, len(view)+8), view...), provider.Message{Role: provider.RoleUser, Text: user})
	for step := 0; step < maxFlushSteps; step++ {
		req := &provider.Request{Model: fm.ModelID, System: system, Tools: ft.defs, MaxTokens: fm.MaxTokens, Messages: msgs}
		text, calls, _, _, err := provider.Collect(fm.Provider.Stream(ctx, req))
		if err != nil {
			return fmt.Errorf("memory flush call: %w", err)
		}
		if len(calls) == 0 {
			if t := strings.TrimSpace(text); t != "" && !compaction.IsSilent(t) {
				r.log.Info("memory flush replied (not delivered)", "sessionKey", ft.info.SessionKey, "chars", len(t))
			}
			return nil
		}
		msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Text: text, ToolCalls: calls})
		for _, call := range calls {
			msgs = append(msgs, r.flushTool(ctx, ft, call))
		}
	}
	return errors.New("memory flush: step limit reached")
}

// flushTool runs one tool call of the flush and returns its result message.
func (r *Runner) flushTool(ctx context.Context, ft *flushTurn, call provider.ToolCall) provider.Message {
	var res *tools.Result
	if t, ok := ft.tools.Get(call.Name); !ok {
		res = tools.ErrorResult(call.Name, tools.NotFoundError(call.Name))
	} else {
		var err error
		if res, err = callSafely(tools.WithCaller(ctx, ft.caller), t, call.Arguments); err != nil {
			res = tools.ErrorResult(call.Name, err)
		}
	}
	return provider.Message{Role: provider.RoleTool, Text: res.Text, ToolCallID: call.ID, ToolName: call.Name, IsError: res.IsError}
}

// notice shows text to the session's clients as a gateway message that is
// not stored: the model never sees it (the reference's compaction notices).
func (r *Runner) notice(st *runState, text string) {
	now := r.now()
	msg := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(text)}, now)
	msg.Provider, msg.Model, msg.StopReason = PostProvider, PostModel, "stop"
	id := "notice-" + r.newID()
	msg.Meta = &transcript.Meta{RunID: id}
	run := st.run
	ns := &runState{run: &store.Run{RunID: id, SessionKey: run.SessionKey, SessionID: run.SessionID, AgentID: run.AgentID}, spawnedBy: st.spawnedBy}
	r.emit(ns, Event{Stream: StreamPost, Message: msg, Time: now})
}

// CompactionCount is how many compactions sess's transcript has had (the
// compactionCount the runner keeps in the session's extra fields; 0 when
// there is none).
func CompactionCount(sess *store.Session) int64 {
	n, _ := extraInt(sess.Extra, "compactionCount")
	return n
}

// extraInt reads the integer member name of a JSON object.
func extraInt(raw json.RawMessage, name string) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	m := map[string]json.RawMessage{}
	if json.Unmarshal(raw, &m) != nil {
		return 0, false
	}
	v, ok := m[name]
	if !ok {
		return 0, false
	}
	var n int64
	if json.Unmarshal(v, &n) != nil {
		return 0, false
	}
	return n, true
}
