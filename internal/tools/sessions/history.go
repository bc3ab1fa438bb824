package sessions

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// HistoryToolName is the wire name of sessions_history.
const HistoryToolName = "sessions_history"

// Limits of the gateway's chat.history that sessions_history relies on
// (docs/spec/reference-behaviour.md §12).
const (
	defaultHistoryLimit = 200
	maxHistoryLimit     = 1000
	// silentReply is the assistant reply meaning "say nothing"; chat.history
	// drops such messages.
	silentReply = sanitize.NoReply
)

var historySchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "sessionKey": {"type": "string"},
    "limit": {"type": "number", "minimum": 1},
    "includeTools": {"type": "boolean"},
    "query": {"type": "string", "description": "Return only messages containing this text (case-insensitive), searched across the session's current and earlier (reset or compacted) history."}
  },
  "required": ["sessionKey"]
}`)

type historyTool struct{ t *Tools }

func (historyTool) Name() string            { return HistoryToolName }
func (historyTool) Label() string           { return "Session History" }
func (historyTool) Description() string     { return "Fetch message history for a session." }
func (historyTool) Schema() json.RawMessage { return historySchema }

func (h historyTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	res, err := h.t.history(ctx, tools.CallerFrom(ctx), p)
	if err != nil {
		return nil, err
	}
	return tools.JSONResult(res), nil
}

// statusResult is the payload of a refused call: {status, error} and
// nothing else.
type statusResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
}

// historyResult is sessions_history's payload, fields in the reference's
// order.
type historyResult struct {
	SessionKey       string           `json:"sessionKey"`
	Messages         []map[string]any `json:"messages"`
	Truncated        bool             `json:"truncated"`
	DroppedMessages  bool             `json:"droppedMessages"`
	ContentTruncated bool             `json:"contentTruncated"`
	ContentRedacted  bool             `json:"contentRedacted"`
	Bytes            int              `json:"bytes"`
}

// history implements sessions_history (docs/spec/reference-behaviour.md §5). It returns
// *historyResult, or *statusResult when the target cannot be resolved or
// is not visible.
func (t *Tools) history(ctx context.Context, caller tools.Caller, p tools.Params) (any, error) {
	raw, err := p.RequiredString("sessionKey")
	if err != nil {
		return nil, err
	}
	c, err := t.newCallCtx(ctx, caller, policy.ActionHistory)
	if err != nil {
		return nil, err
	}
	target, fail := t.resolveRef(ctx, c, raw)
	if fail != nil {
		return &statusResult{Status: fail.Status, Error: fail.Message}, nil
	}
	if ok, status, msg := c.guard.Check(policy.ActionHistory, target.Key); !ok {
		return &statusResult{Status: status, Error: msg}, nil
	}
	limit := defaultHistoryLimit
	if n, ok := p.Int("limit", 1); ok {
		if n > maxHistoryLimit {
			// What the gateway's schema validation answers.
			return nil, fmt.Errorf("invalid chat.history params: at /limit: must be <= %d", maxHistoryLimit)
		}
		limit = n
	}
	if target.Key == caller.SessionKey {
		// Its own transcript: with the results of the step's earlier calls.
		if err := tools.AwaitWritten(ctx); err != nil {
			return nil, err
		}
	}
	sess, err := t.d.Store.GetSession(ctx, target.Key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	var msgs []map[string]any
	if q := p.String("query"); strings.TrimSpace(q) != "" {
		msgs, err = t.searchHistory(ctx, sess, strings.ToLower(strings.TrimSpace(q)), limit)
	} else {
		msgs, err = t.chatHistory(ctx, sess, limit)
	}
	if err != nil {
		return nil, err
	}
	s := sanitize.SanitizeHistory(msgs, sanitize.HistoryOptions{
		// Boolean(params.includeTools): any truthy value, no snake_case alias.
		IncludeTools: p.Has("includeTools") && p.Truthy("includeTools"),
		Redactor:     t.redactor,
	})
	return &historyResult{
		SessionKey:       target.Display,
		Messages:         s.Messages,
		Truncated:        s.Truncated,
		DroppedMessages:  s.DroppedMessages,
		ContentTruncated: s.ContentTruncated,
		ContentRedacted:  s.ContentRedacted,
		Bytes:            s.Bytes,
	}, nil
}

// chatHistory returns the messages of sess's current transcript the way the
// gateway's chat.history does: of the last limit entries, the message
// entries, without silent NO_REPLY assistant replies, each as its raw JSON
// object with the "__openclaw" block extended by the entry's id and seq.
// A nil sess (no such session) has no messages. The result is never nil.
func (t *Tools) chatHistory(ctx context.Context, sess *store.Session, limit int) ([]map[string]any, error) {
	out := []map[string]any{}
	if sess == nil || sess.SessionID == "" {
		return out, nil
	}
	hist, err := t.d.Store.History(ctx, sess.SessionID, store.HistoryOptions{Limit: limit})
	if err != nil {
		return nil, err
	}
	for _, m := range hist {
		msg := m.Entry.Message
		if m.Entry.Type != transcript.TypeMessage || msg == nil {
			continue
		}
		if msg.Role == transcript.RoleAssistant && strings.TrimSpace(msg.Content.Text()) == silentReply {
			continue
		}
		raw, err := rawHistoryMessage(m)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

// Bounds of a sessions_history query.
const (
	searchPage    = 500
	maxSearchScan = 200000
)

// searchHistory returns the last limit messages of sess that contain
// query (lower case), from its current transcript and the ones it had
// before resets, oldest first; each carries its transcript's sessionId in
// "__openclaw".
func (t *Tools) searchHistory(ctx context.Context, sess *store.Session, query string, limit int) ([]map[string]any, error) {
	out := []map[string]any{}
	if sess == nil || sess.SessionID == "" {
		return out, nil
	}
	var raw error
	_, _, err := store.WalkTranscripts(ctx, t.d.Store, sess.SessionID, searchPage, maxSearchScan, func(sid string, m store.Message) bool {
		msg := m.Entry.Message
		if m.Entry.Type != transcript.TypeMessage || msg == nil || !strings.Contains(strings.ToLower(msg.Content.Text()), query) {
			return true
		}
		row, err := rawHistoryMessage(m)
		if err != nil {
			raw = err
			return false
		}
		if meta, ok := row["__openclaw"].(map[string]any); ok {
			meta["sessionId"] = sid
		}
		out = append(out, row)
		return len(out) < limit
	})
	if err = cmp.Or(raw, err); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// rawHistoryMessage returns the transcript message of m as a generic JSON
// object, its "__openclaw" block extended by the entry id and seq.
func rawHistoryMessage(m store.Message) (map[string]any, error) {
	msg := *m.Entry.Message
	meta := transcript.Meta{}
	if msg.Meta != nil {
		meta = *msg.Meta
	}
	extra := make(map[string]json.RawMessage, len(meta.Extra)+2)
	for k, v := range meta.Extra {
		extra[k] = v
	}
	id, err := json.Marshal(m.Entry.ID)
	if err != nil {
		return nil, err
	}
	extra["id"] = id
	seq, err := json.Marshal(m.Seq)
	if err != nil {
		return nil, err
	}
	extra["seq"] = seq
	meta.Extra = extra
	msg.Meta = &meta
	b, err := json.Marshal(&msg)
	if err != nil {
		return nil, fmt.Errorf("sessions.history: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("sessions.history: %w", err)
	}
	return out, nil
}
