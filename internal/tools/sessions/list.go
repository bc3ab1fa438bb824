package sessions

import (
	"cmp"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// ListToolName is the wire name of sessions_list.
const ListToolName = "sessions_list"

const (
	// maxListMessages caps sessions_list's messageLimit (undocumented in
	// the design doc, present in the reference).
	maxListMessages = 20
	// listHistoryWorkers bounds the concurrent transcript reads of
	// sessions_list.
	listHistoryWorkers = 4
	// channelInternal is the channel column of cron, hook and node rows.
	channelInternal = "internal"
	channelUnknown  = "unknown"
)

var listSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "kinds": {"type": "array", "items": {"type": "string"}},
    "limit": {"type": "number", "minimum": 1},
    "activeMinutes": {"type": "number", "minimum": 1},
    "messageLimit": {"type": "number", "minimum": 0}
  }
}`)

type listTool struct{ t *Tools }

func (listTool) Name() string            { return ListToolName }
func (listTool) Label() string           { return "Sessions" }
func (listTool) Description() string     { return "List sessions with optional filters and last messages." }
func (listTool) Schema() json.RawMessage { return listSchema }

func (l listTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	res, err := l.t.list(ctx, tools.CallerFrom(ctx), p)
	if err != nil {
		return nil, err
	}
	return tools.JSONResult(res), nil
}

// listResult is sessions_list's payload.
type listResult struct {
	Count    int        `json:"count"`
	Sessions []*listRow `json:"sessions"`
}

// listRow is one sessions_list row, fields in the reference's order.
// Absent optional fields are omitted, as JSON.stringify drops undefined.
type listRow struct {
	Key             string        `json:"key"`
	Kind            string        `json:"kind"`
	Channel         string        `json:"channel"`
	Label           string        `json:"label,omitempty"`
	DisplayName     string        `json:"displayName,omitempty"`
	DeliveryContext *listDelivery `json:"deliveryContext,omitempty"`
	UpdatedAt       int64         `json:"updatedAt"`
	SessionID       string        `json:"sessionId,omitempty"`
	Model           string        `json:"model,omitempty"`
	ContextTokens   int64         `json:"contextTokens,omitempty"`
	TotalTokens     int64         `json:"totalTokens"`
	ThinkingLevel   string        `json:"thinkingLevel,omitempty"`
	VerboseLevel    string        `json:"verboseLevel,omitempty"`
	SystemSent      bool          `json:"systemSent"`
	AbortedLastRun  bool          `json:"abortedLastRun"`
	SendPolicy      string        `json:"sendPolicy,omitempty"`
	LastChannel     string        `json:"lastChannel,omitempty"`
	LastTo          string        `json:"lastTo,omitempty"`
	LastAccountID   string        `json:"lastAccountId,omitempty"`
	TranscriptPath  string        `json:"transcriptPath,omitempty"`
	// Messages is set (possibly empty) only when messageLimit > 0.
	Messages []map[string]any `json:"messages,omitzero"`
	// Budget is set on the root of a budgeted session tree.
	Budget *BudgetView `json:"budget,omitempty"`
}

// listDelivery is a row's deliveryContext: the fields the session entry's
// delivery context has.
type listDelivery struct {
	Channel   string `json:"channel,omitempty"`
	To        string `json:"to,omitempty"`
	AccountID string `json:"accountId,omitempty"`
}

// list implements sessions_list (docs/spec/reference-behaviour.md §4).
func (t *Tools) list(ctx context.Context, caller tools.Caller, p tools.Params) (*listResult, error) {
	c, err := t.newCallCtx(ctx, caller, policy.ActionList)
	if err != nil {
		return nil, err
	}

	kinds := map[string]bool{}
	for _, k := range p.Strings("kinds") {
		if kind, ok := sessionkey.ParseKind(k); ok {
			kinds[string(kind)] = true
		}
	}
	limit, hasLimit := p.Int("limit", 1)
	activeMinutes, hasActive := p.Int("activeMinutes", 1)
	messageLimit, _ := p.Int("messageLimit", 0)
	messageLimit = min(messageLimit, maxListMessages)

	entries, err := t.listEntries(ctx, c, hasLimit, limit, hasActive, activeMinutes)
	if err != nil {
		return nil, err
	}

	rows := []*listRow{}
	var withMessages []*store.Session // parallel to rows when messageLimit > 0
	for _, e := range entries {
		if e.Key == "" {
			continue
		}
		if ok, _, _ := c.guard.Check(policy.ActionList, e.Key); !ok {
			continue // denied rows are left out silently
		}
		if e.Key == sessionkey.UnknownKey || e.Key == sessionkey.GlobalKey && t.alias.Alias != sessionkey.GlobalKey {
			continue
		}
		gatewayKind := e.Kind
		if gatewayKind == "" {
			gatewayKind = string(sessionkey.RowKindOf(e.Key))
		}
		kind := sessionkey.ClassifyKind(e.Key, t.alias, gatewayKind)
		if len(kinds) > 0 && !kinds[string(kind)] {
			continue
		}
		row := t.listRow(e, kind)
		if t.d.Budget != nil {
			b, err := t.d.Budget(ctx, e)
			if err != nil {
				return nil, err
			}
			row.Budget = b
		}
		rows = append(rows, row)
		if messageLimit > 0 {
			withMessages = append(withMessages, e)
		}
	}

	if messageLimit > 0 {
		if err := t.listMessages(ctx, rows, withMessages, messageLimit); err != nil {
			return nil, err
		}
	}
	return &listResult{Count: len(rows), Sessions: rows}, nil
}

// listEntries returns the session entries the gateway's sessions.list
// answers the reference tool: sorted by updatedAt descending; without cron
// run sessions; without the reserved global and unknown sessions when the
// caller is sandbox-restricted (which also lists only the sessions it
// spawned); updated within activeMinutes; then at most limit entries.
func (t *Tools) listEntries(ctx context.Context, c *callCtx, hasLimit bool, limit int, hasActive bool, activeMinutes int) ([]*store.Session, error) {
	opts := store.ListOptions{}
	if c.restrict {
		opts.SpawnedBy = c.requester
	}
	if hasActive {
		opts.UpdatedSince = t.d.Now().Add(-time.Duration(activeMinutes) * time.Minute)
	}
	// Filters and the limit run in the store, in its order: O(page), not
	// O(sessions).
	opts.Exclude = store.ClassCronRun
	if c.restrict {
		opts.Exclude |= store.ClassGlobal | store.ClassUnknown
	}
	if hasLimit {
		opts.Limit = limit
	}
	return t.d.Store.ListSessions(ctx, opts)
}

// listRow builds the row of session entry e of kind kind.
func (t *Tools) listRow(e *store.Session, kind sessionkey.Kind) *listRow {
	var dc store.DeliveryContext
	if e.DeliveryContext != nil {
		dc = *e.DeliveryContext
	}
	row := &listRow{
		Key:            t.alias.Display(e.Key),
		Kind:           string(kind),
		Label:          e.Label,
		DisplayName:    e.DisplayName,
		SessionID:      e.SessionID,
		Model:          e.Model,
		ContextTokens:  e.ContextTokens,
		TotalTokens:    e.TotalTokens,
		ThinkingLevel:  e.ThinkingLevel,
		VerboseLevel:   e.VerboseLevel,
		SystemSent:     e.SystemSent,
		AbortedLastRun: e.AbortedLastRun,
		SendPolicy:     e.SendPolicy,
		LastChannel:    cmp.Or(dc.Channel, e.LastChannel),
		LastTo:         cmp.Or(dc.To, e.LastTo),
		LastAccountID:  cmp.Or(dc.AccountID, e.LastAccountID),
	}
	if !e.UpdatedAt.IsZero() {
		row.UpdatedAt = e.UpdatedAt.UnixMilli()
	}
	if dc.Channel != "" || dc.To != "" || dc.AccountID != "" {
		row.DeliveryContext = &listDelivery{Channel: dc.Channel, To: dc.To, AccountID: dc.AccountID}
	}
	row.Channel = deriveChannel(e.Key, kind, e.Channel, row.LastChannel)
	if e.SessionID != "" {
		row.TranscriptPath = t.transcriptPath(e.Key, e.SessionID)
	}
	return row
}

// deriveChannel is the channel column (the reference's deriveChannel):
// "internal" for cron, hook and node rows; else the entry's channel, else
// its last channel, else the channel a legacy group key names; else
// "unknown".
func deriveChannel(key string, kind sessionkey.Kind, channel, lastChannel string) string {
	switch kind {
	case sessionkey.KindCron, sessionkey.KindHook, sessionkey.KindNode:
		return channelInternal
	}
	if ch := strings.TrimSpace(channel); ch != "" {
		return ch
	}
	if ch := strings.TrimSpace(lastChannel); ch != "" {
		return ch
	}
	if ch := sessionkey.RawChannelFromKey(key); ch != "" {
		return ch
	}
	return channelUnknown
}

// transcriptPath is the best-effort transcriptPath column:
// <stateDir>/agents/<agentId>/sessions/<sessionId>.jsonl, the agent being
// the key's. Switchboard keeps transcripts in its database, not in files;
// this is where the reference would keep the file and where `switchboard
// sessions export` writes it, so the path need not exist. Like the
// reference it is "" (omitted) for an unsafe session id, and also when no
// state directory is known. An entry's own sessionFile is not consulted:
// imported files are not kept.
func (t *Tools) transcriptPath(key, sessionID string) string {
	dir := t.d.StateDir
	if dir == "" && t.d.Settings != nil {
		dir = t.d.Settings.StateDir
	}
	id := strings.TrimSpace(sessionID)
	if dir == "" || !safeSessionID(id) {
		return ""
	}
	return filepath.Join(dir, "agents", sessionkey.AgentID(key), "sessions", id+".jsonl")
}

// safeSessionID matches the reference's ^[a-z0-9][a-z0-9._-]{0,127}$/i,
// which keeps a session id from escaping the sessions directory.
func safeSessionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		ch := id[i]
		alnum := 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9'
		if !alnum && (i == 0 || ch != '.' && ch != '_' && ch != '-') {
			return false
		}
	}
	return true
}

// listMessages fills rows[i].Messages with the last limit non-tool
// messages of sessions[i], reading up to listHistoryWorkers transcripts at
// once. Like the reference, the transcript window is limit messages before
// tool messages are dropped. The first error fails the call.
func (t *Tools) listMessages(ctx context.Context, rows []*listRow, sessions []*store.Session, limit int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex // guards next and firstErr
		next     int
		firstErr error
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil || next >= len(rows) {
			return 0, false
		}
		i := next
		next++
		return i, true
	}
	var wg sync.WaitGroup
	for range min(listHistoryWorkers, len(rows)) {
		wg.Go(func() {
			for {
				i, ok := take()
				if !ok {
					return
				}
				msgs, err := t.chatHistory(ctx, sessions[i], limit)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					return
				}
				rows[i].Messages = lastMessages(withoutToolMessages(msgs), limit)
			}
		})
	}
	wg.Wait()
	return firstErr
}

// withoutToolMessages drops toolResult and tool messages (the reference's
// stripToolMessages).
func withoutToolMessages(msgs []map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		switch role, _ := m["role"].(string); role {
		case transcript.RoleToolResult, transcript.RoleTool:
			continue
		}
		out = append(out, m)
	}
	return out
}

// lastMessages returns the last n of msgs.
func lastMessages(msgs []map[string]any, n int) []map[string]any {
	if len(msgs) > n {
		return msgs[len(msgs)-n:]
	}
	return msgs
}
