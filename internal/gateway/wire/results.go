package wire

import (
	"encoding/json"
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"slices"
)

// SessionRow is one session as sessions.list, sessions.patch and friends
// report it: the stored session entry plus key, kind and updatedAt in
// milliseconds.
type SessionRow struct {
	Key       string `json:"key"`
	Kind      string `json:"kind"` // direct|group|global|unknown
	SessionID string `json:"sessionId,omitempty"`
	AgentID   string `json:"agentId,omitempty"`
	Channel   string `json:"channel,omitempty"`
	ChatType  string `json:"chatType,omitempty"`
	// Status is that of the session's latest run: queued, running, done,
	// failed, killed or timeout (sessions.list; "" when it never ran).
	Status string `json:"status,omitempty"`
	// Archived says the session is archived (sessions.patch archived);
	// its archivedAt (ms) comes with the entry's other fields.
	Archived    bool   `json:"archived,omitempty"`
	DisplayName string `json:"displayName,omitempty"`
	Label       string `json:"label,omitempty"`
	// LastMessagePreview is the start of the newest message with text
	// (sessions.list and sessions.describe with includeLastMessage).
	LastMessagePreview string `json:"lastMessagePreview,omitempty"`
	SpawnedBy          string `json:"spawnedBy,omitempty"`
	SpawnDepth         int    `json:"spawnDepth,omitempty"`
	Model              string `json:"model,omitempty"`
	ThinkingLevel      string `json:"thinkingLevel,omitempty"`
	VerboseLevel       string `json:"verboseLevel,omitempty"`
	// ElevatedLevel is the session's elevated level (/elevated,
	// sessions.patch elevatedLevel).
	ElevatedLevel string `json:"elevatedLevel,omitempty"`
	// Untrusted names the origin outside the operator that last drove the
	// session ("webhook", "a2a", "<channel> room"): its runs, and all they
	// cause, get no host-acting tools unless the operator grants them.
	Untrusted      string           `json:"untrusted,omitempty"`
	ContextTokens  int64            `json:"contextTokens,omitempty"`
	InputTokens    int64            `json:"inputTokens"`
	OutputTokens   int64            `json:"outputTokens"`
	TotalTokens    int64            `json:"totalTokens"`
	SystemSent     bool             `json:"systemSent"`
	AbortedLastRun bool             `json:"abortedLastRun"`
	SendPolicy     string           `json:"sendPolicy,omitempty"`
	LastChannel    string           `json:"lastChannel,omitempty"`
	LastTo         string           `json:"lastTo,omitempty"`
	LastAccountID  string           `json:"lastAccountId,omitempty"`
	Delivery       *DeliveryContext `json:"deliveryContext,omitempty"`
	CreatedAt      int64            `json:"createdAt,omitempty"` // ms
	UpdatedAt      int64            `json:"updatedAt"`           // ms
	// Budget is set on the root of a budgeted session tree (sessions.list):
	// its limits, what it used, and why it is spent.
	Budget any `json:"budget,omitempty"`

	// Extra holds other entry fields (kept from imported entries); they are
	// written after the known ones, which win on a name clash.
	Extra map[string]json.RawMessage `json:"-"`
}

// DeliveryContext is where a session's replies go by default.
type DeliveryContext struct {
	Channel   string `json:"channel,omitempty"`
	To        string `json:"to,omitempty"`
	AccountID string `json:"accountId,omitempty"`
	ThreadID  string `json:"threadId,omitempty"`
}

// MarshalJSON writes the known fields, then Extra's members sorted by
// name.
func (r SessionRow) MarshalJSON() ([]byte, error) {
	type plain SessionRow
	b, err := json.Marshal(plain(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	var known map[string]json.RawMessage
	if err := json.Unmarshal(b, &known); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		if _, dup := known[k]; !dup && json.Valid(r.Extra[k]) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	b = b[:len(b)-1]
	for _, k := range names {
		b = append(b, ',')
		b = jsonenc.AppendString(b, k)
		b = append(b, ':')
		b = append(b, r.Extra[k]...)
	}
	return append(b, '}'), nil
}

// SessionsListResult is the result of sessions.list.
type SessionsListResult struct {
	TS           int64        `json:"ts"`
	Path         string       `json:"path"`
	Count        int          `json:"count"`
	LimitApplied int          `json:"limitApplied,omitempty"`
	HasMore      bool         `json:"hasMore"`
	NextOffset   *int         `json:"nextOffset,omitempty"`
	Defaults     ListDefaults `json:"defaults"`
	Sessions     []SessionRow `json:"sessions"`
}

// ListDefaults are the model defaults sessions.list reports.
type ListDefaults struct {
	ModelProvider string `json:"modelProvider,omitempty"`
	Model         string `json:"model,omitempty"`
	ContextTokens int64  `json:"contextTokens,omitempty"`
}

// SessionsResolveResult is the result of sessions.resolve.
type SessionsResolveResult struct {
	OK          bool   `json:"ok"`
	Key         string `json:"key"`
	AgentID     string `json:"agentId"`
	DisplayName string `json:"displayName,omitempty"`
}

// SessionsPatchResult is the result of sessions.patch.
type SessionsPatchResult struct {
	OK    bool       `json:"ok"`
	Path  string     `json:"path"`
	Key   string     `json:"key"`
	Entry SessionRow `json:"entry"`
}

// SessionsEntryResult is the result of sessions.reset and sessions.create.
type SessionsEntryResult struct {
	OK    bool       `json:"ok"`
	Key   string     `json:"key"`
	Entry SessionRow `json:"entry"`
	// Set by sessions.create: the new session's id, and with a message
	// its first run (RunStarted, RunID, Status as chat.send answers) or
	// why it did not start (RunError; the session exists all the same).
	SessionID  string `json:"sessionId,omitempty"`
	RunStarted bool   `json:"runStarted,omitempty"`
	RunID      string `json:"runId,omitempty"`
	Status     string `json:"status,omitempty"`
	RunError   *Error `json:"runError,omitempty"`
}

// SessionsDeleteResult is the result of sessions.delete.
type SessionsDeleteResult struct {
	OK       bool     `json:"ok"`
	Key      string   `json:"key"`
	Deleted  bool     `json:"deleted"`
	Archived []string `json:"archived"`
}

// ChatSendResult is the result of chat.send.
type ChatSendResult struct {
	RunID string `json:"runId"`
	// Status is "started", or for a repeated idempotencyKey "in_flight"
	// while the run is live and its terminal status once it ended.
	Status string `json:"status"`
}

// ChatHistoryResult is the result of chat.history.
type ChatHistoryResult struct {
	SessionKey    string            `json:"sessionKey"`
	SessionID     string            `json:"sessionId,omitempty"`
	Messages      []json.RawMessage `json:"messages"`
	ThinkingLevel string            `json:"thinkingLevel,omitempty"`
	VerboseLevel  string            `json:"verboseLevel,omitempty"`
	// PendingInputs are accepted messages that have not run yet.
	PendingInputs *PendingInputs `json:"pendingInputs,omitempty"`
	// Paging (not for anchored reads): Offset echoes the request,
	// TotalMessages counts the transcript's entries, HasMore says older
	// entries exist in it, and NextOffset asks for them.
	Offset        *int  `json:"offset,omitempty"`
	NextOffset    int   `json:"nextOffset,omitempty"`
	HasMore       *bool `json:"hasMore,omitempty"`
	TotalMessages *int  `json:"totalMessages,omitempty"`
	// NextHistoryCursor continues with older entries, in this transcript
	// or the one it continues after a reset ("" when there are none).
	NextHistoryCursor string `json:"nextHistoryCursor,omitempty"`
}

// PendingInputs lists a session's accepted input that is not in its
// transcript yet (queued) or never will be (cancelled): at most
// MaxPendingInputs items, oldest queued first; Total counts them all.
type PendingInputs struct {
	// Items are the listed inputs.
	Items []PendingInput `json:"items"`
	// Total is how many there are.
	Total int `json:"total"`
}

// MaxPendingInputs bounds PendingInputs.Items (the reference's maxItems).
const MaxPendingInputs = 20

// PendingInput is one entry of PendingInputs; State is "queued",
// "cancelled" or "interrupted".
type PendingInput struct {
	ID         string `json:"id"`
	AcceptedAt int64  `json:"acceptedAt"`
	State      string `json:"state"`
	Message    string `json:"message"`
	RunID      string `json:"runId"`
}

// ChatAbortResult is the result of chat.abort.
type ChatAbortResult struct {
	OK      bool     `json:"ok"`
	Aborted bool     `json:"aborted"`
	RunIDs  []string `json:"runIds"`
}

// SessionsExportResult is the result of sessions.export: where the JSONL
// transcript was written.
type SessionsExportResult struct {
	OK        bool   `json:"ok"`
	Key       string `json:"key"`
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
}

// ToolsInvokeResult is the result of tools.invoke: the reference's tool
// result envelope (details plus text content).
type ToolsInvokeResult struct {
	OK bool `json:"ok"`
	// ToolName is the tool, as the reference names it; Tool repeats it.
	ToolName string          `json:"toolName,omitempty"`
	Tool     string          `json:"tool"`
	Details  json.RawMessage `json:"details,omitempty"`
	Content  []TextBlock     `json:"content,omitempty"`
	IsError  bool            `json:"isError"`
	// Error is set when OK is false: the tool was not run (unknown or not
	// allowed, bad target, input error) or failed.
	Error *ToolsInvokeError `json:"error,omitempty"`
}

// ToolsInvokeError is a failed tools.invoke: the reference's code
// (validation_error, not_found, forbidden, internal_error) and message.
type ToolsInvokeError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TextBlock is a text content block.
type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ChatInjectResult is the result of chat.inject.
type ChatInjectResult struct {
	OK        bool   `json:"ok"`
	MessageID string `json:"messageId"`
}

// AgentResult is the first result of agent. When the run ends, the gateway
// answers the same request id a second time with an AgentFinalResult
// (clients that pass expectFinal wait for it; others ignore it).
type AgentResult struct {
	RunID      string `json:"runId"`
	SessionKey string `json:"sessionKey"`
	AgentID    string `json:"agentId"`
	Status     string `json:"status"` // "accepted" or "in_flight"
	AcceptedAt int64  `json:"acceptedAt"`
}

// AgentFinalResult is the second response of agent, sent when the run
// ends.
type AgentFinalResult struct {
	RunID   string          `json:"runId"`
	Status  string          `json:"status"` // "ok", "error" or "timeout"
	Summary string          `json:"summary"`
	Result  *AgentRunOutput `json:"result,omitempty"`
}

// AgentRunOutput is the reply of a finished run.
type AgentRunOutput struct {
	Payloads []AgentPayload `json:"payloads"`
	Meta     AgentRunMeta   `json:"meta"`
}

// AgentPayload is one reply payload.
type AgentPayload struct {
	Text string `json:"text"`
}

// AgentRunMeta describes a finished run.
type AgentRunMeta struct {
	DurationMs int64  `json:"durationMs"`
	StopReason string `json:"stopReason,omitempty"`
	Aborted    bool   `json:"aborted"`
}

// AgentWaitResult is the result of agent.wait.
type AgentWaitResult struct {
	RunID      string `json:"runId"`
	Status     string `json:"status"` // "ok", "error" or "timeout"
	StartedAt  int64  `json:"startedAt,omitempty"`
	EndedAt    int64  `json:"endedAt,omitempty"`
	Error      string `json:"error,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}

// AgentsListResult is the result of agents.list.
type AgentsListResult struct {
	DefaultID         string         `json:"defaultId"`
	MainKey           string         `json:"mainKey"`
	Scope             string         `json:"scope"`
	Ownership         string         `json:"ownership"`
	SelectionRequired bool           `json:"selectionRequired"`
	Agents            []AgentSummary `json:"agents"`
	// RemotePeers are the remote A2A peers sessions_send reaches as
	// "a2a:<peer>" (Switchboard's own member; none: omitted).
	RemotePeers []RemotePeer `json:"remotePeers,omitempty"`
}

// RemotePeer is a remote A2A peer in agents.list.
type RemotePeer struct {
	Name       string `json:"name"`
	SessionKey string `json:"sessionKey"`
	Remote     bool   `json:"remote"`
}

// AgentSummary is one agents.list row.
type AgentSummary struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Workspace is the directory the agent's runs work in.
	Workspace string    `json:"workspace,omitempty"`
	Model     *ModelRef `json:"model,omitempty"`
}

// ModelRef is a model selection.
type ModelRef struct {
	Primary string `json:"primary"`
}

// Chat event states.
const (
	ChatStateDelta   = "delta"
	ChatStateFinal   = "final"
	ChatStateAborted = "aborted"
	ChatStateError   = "error"
)

// ChatEvent is the payload of the chat event: the UI-level stream of a run.
type ChatEvent struct {
	RunID      string `json:"runId"`
	SessionKey string `json:"sessionKey"`
	AgentID    string `json:"agentId,omitempty"`
	// Seq is the per-run event counter of the agent event this one was
	// derived from.
	Seq       int64  `json:"seq"`
	State     string `json:"state"`
	SpawnedBy string `json:"spawnedBy,omitempty"`
	// DeltaText is the text added since the previous delta (state delta).
	DeltaText string `json:"deltaText,omitempty"`
	// Message is the assistant message so far (delta) or the complete one
	// (final, aborted).
	Message      json.RawMessage `json:"message,omitempty"`
	Usage        json.RawMessage `json:"usage,omitempty"`
	StopReason   string          `json:"stopReason,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	// ErrorKind is refusal|timeout|rate_limit|context_length|unknown.
	ErrorKind string `json:"errorKind,omitempty"`
}

// Agent event streams.
const (
	StreamLifecycle = "lifecycle"
	StreamAssistant = "assistant"
	StreamTool      = "tool"
	StreamUsage     = "usage"
	// StreamCompaction: {phase: "start"|"end", ...} around a compaction.
	StreamCompaction = "compaction"
)

// AgentEvent is the payload of the agent event: the low-level stream of a
// run.
type AgentEvent struct {
	RunID       string          `json:"runId"`
	Seq         int64           `json:"seq"`
	Stream      string          `json:"stream"`
	TS          int64           `json:"ts"`
	Data        json.RawMessage `json:"data"`
	SessionKey  string          `json:"sessionKey,omitempty"`
	AgentID     string          `json:"agentId,omitempty"`
	SessionID   string          `json:"sessionId,omitempty"`
	Lane        string          `json:"lane,omitempty"`
	SpawnedBy   string          `json:"spawnedBy,omitempty"`
	IsHeartbeat bool            `json:"isHeartbeat"`
}

// SubagentsListResult is the result of subagents.list, newest first.
type SubagentsListResult struct {
	Subagents []SubagentInfo `json:"subagents"`
	// HasMore says rows past the limit were left out.
	HasMore bool `json:"hasMore,omitempty"`
}

// SubagentInfo is one spawned sub-agent run: its registry record, the
// state of its run and of its completion announce. Times are in
// milliseconds.
type SubagentInfo struct {
	ChildRunID        string `json:"childRunId"`
	ChildSessionKey   string `json:"childSessionKey"`
	AgentID           string `json:"agentId"`
	RequesterKey      string `json:"requesterKey"`
	RequesterDisplay  string `json:"requesterDisplay"`
	RequesterParent   string `json:"requesterParent,omitempty"`
	RequesterChannel  string `json:"requesterChannel,omitempty"`
	Task              string `json:"task"`
	Label             string `json:"label,omitempty"`
	Cleanup           string `json:"cleanup"` // delete|keep
	Mode              string `json:"mode"`    // run|session
	Model             string `json:"model,omitempty"`
	RunTimeoutSeconds int    `json:"runTimeoutSeconds"`
	CreatedAt         int64  `json:"createdAt"`
	ArchiveAtMs       int64  `json:"archiveAtMs,omitempty"`
	Workspace         string `json:"workspace,omitempty"`
	AttachmentsDir    string `json:"attachmentsDir,omitempty"`
	RetainAttachments bool   `json:"retainAttachments,omitempty"`
	// Killed says the run was killed (subagents.kill, /stop): its end is
	// not announced.
	Killed bool `json:"killed,omitempty"`

	// RunStatus is the child run's status, "" when the run is not stored.
	RunStatus string `json:"runStatus"`
	StartedAt int64  `json:"startedAt,omitempty"`
	EndedAt   int64  `json:"endedAt,omitempty"`
	Error     string `json:"error,omitempty"`
	// AnnounceStatus is pending, delivered or dead; "" until the child
	// ends.
	AnnounceID     string `json:"announceId,omitempty"`
	AnnounceStatus string `json:"announceStatus,omitempty"`
	// Archived is set once the child is archived or deleted.
	Archived bool `json:"archived"`
}

// SubagentsKillResult is the result of subagents.kill: the run ids that
// were aborted, the child's and its live descendants'.
type SubagentsKillResult struct {
	OK     bool     `json:"ok"`
	Killed []string `json:"killed"`
}

// AnnouncesListResult is the result of announces.list.
type AnnouncesListResult struct {
	Announces []AnnounceRow `json:"announces"`
	// HasMore says rows past the limit were left out.
	HasMore bool `json:"hasMore,omitempty"`
}

// AnnounceRow is one announce: a sub-agent completion on its way to the
// requester session (SessionKey). Times are in milliseconds, 0 when unset.
type AnnounceRow struct {
	ID            string `json:"id"`
	Kind          string `json:"kind"`
	SessionKey    string `json:"sessionKey"`
	RunID         string `json:"runId"`
	Status        string `json:"status"` // pending|delivered|dead
	Attempts      int    `json:"attempts"`
	LastError     string `json:"lastError"`
	CreatedAt     int64  `json:"createdAt"`
	UpdatedAt     int64  `json:"updatedAt"`
	DeliveredAt   int64  `json:"deliveredAt"`
	NextAttemptAt int64  `json:"nextAttemptAt"`
}

// AnnouncesRedeliverResult is the result of announces.redeliver.
type AnnouncesRedeliverResult struct {
	OK bool `json:"ok"`
}
