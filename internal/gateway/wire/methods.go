package wire

import (
	"bytes"
	"encoding/json"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

// Method names.
const (
	MethodConnect         = "connect"
	MethodHealth          = "health"
	MethodSessionsList    = "sessions.list"
	MethodSessionsResolve = "sessions.resolve"
	MethodSessionsPatch   = "sessions.patch"
	MethodSessionsReset   = "sessions.reset"
	MethodSessionsDelete  = "sessions.delete"
	MethodSessionsCreate  = "sessions.create"
	MethodChatSend        = "chat.send"
	MethodChatHistory     = "chat.history"
	MethodChatAbort       = "chat.abort"
	// MethodSessionsAbort aborts a session's active run and, with
	// clearQueued, its queued messages.
	MethodSessionsAbort = "sessions.abort"
	MethodChatInject    = "chat.inject"
	// MethodToolsInvoke runs one agent tool directly (Switchboard's
	// documented method for tools outside a run).
	MethodToolsInvoke = "tools.invoke"
	// MethodSessionsExport writes a session's transcript as JSONL on the
	// gateway host (Switchboard's method).
	MethodSessionsExport = "sessions.export"
	// MethodSessionsSearch searches sessions' transcripts, the ones
	// before resets too.
	MethodSessionsSearch = "sessions.search"
	// MethodSessionsSend sends into an existing session; MethodSessionsSteer
	// is the reference's deprecated alias of chat.send with queueMode
	// "interrupt".
	MethodSessionsSend  = "sessions.send"
	MethodSessionsSteer = "sessions.steer"
	MethodAgent         = "agent"
	MethodAgentWait     = "agent.wait"
	MethodAgentsList    = "agents.list"
	// MethodLogsTail reads the gateway's log file from a cursor.
	MethodLogsTail = "logs.tail"
	// Operator methods of the OpenClaw CLI's status, usage, presence and
	// models commands.
	MethodStatus         = "status"
	MethodSystemPresence = "system-presence"
	MethodLastHeartbeat  = "last-heartbeat"
	MethodUsageStatus    = "usage.status"
	MethodUsageCost      = "usage.cost"
	MethodSessionsUsage  = "sessions.usage"
	MethodModelsList     = "models.list"
	MethodConfigGet      = "config.get"
	// Session subscriptions of session-scoped clients.
	MethodSessionsMessagesSubscribe   = "sessions.messages.subscribe"
	MethodSessionsMessagesUnsubscribe = "sessions.messages.unsubscribe"
)

// Event names.
const (
	EventConnectChallenge = "connect.challenge"
	EventTick             = "tick"
	EventShutdown         = "shutdown"
	EventChat             = "chat"
	EventAgent            = "agent"
	// EventPresence carries {presence: [...]} when a client connects or
	// leaves.
	EventPresence = "presence"
	// EventHealth carries the health method's snapshot, right after
	// hello-ok and then periodically.
	EventHealth = "health"
)

// Nullable is an optional, nullable param: absent (Set false), null (Set
// and Null), or a value. Its zero value is absent.
type Nullable[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Null = true
		var zero T
		n.Value = zero
		return nil
	}
	n.Null = false
	return json.Unmarshal(b, &n.Value)
}

// MarshalJSON implements json.Marshaler; use the omitzero option so that
// an absent value is left out.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.Set || n.Null {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// IsZero reports whether n is absent.
func (n Nullable[T]) IsZero() bool { return !n.Set }

// Of returns a set, non-null Nullable.
func Of[T any](v T) Nullable[T] { return Nullable[T]{Set: true, Value: v} }

// Null returns a set, null Nullable.
func Null[T any]() Nullable[T] { return Nullable[T]{Set: true, Null: true} }

// HealthParams are the params of health.
type HealthParams struct {
	Probe bool `json:"probe,omitempty"`
}

// SessionsListParams are the params of sessions.list. Filters that the
// reference accepts but Switchboard does not implement are admitted by the
// schema and ignored.
type SessionsListParams struct {
	Limit            *int   `json:"limit,omitempty"`
	Offset           *int   `json:"offset,omitempty"`
	ActiveMinutes    *int   `json:"activeMinutes,omitempty"`
	IncludeGlobal    bool   `json:"includeGlobal,omitempty"`
	IncludeUnknown   bool   `json:"includeUnknown,omitempty"`
	ExcludeSubagents bool   `json:"excludeSubagents,omitempty"`
	ExcludeCron      bool   `json:"excludeCron,omitempty"`
	SpawnedBy        string `json:"spawnedBy,omitempty"`
	Label            string `json:"label,omitempty"`
	AgentID          string `json:"agentId,omitempty"`
	Search           string `json:"search,omitempty"`
	// IncludeLastMessage fills each row's LastMessagePreview.
	IncludeLastMessage bool `json:"includeLastMessage,omitempty"`
	// Archived selects archived sessions: false or absent leaves them
	// out, true lists only them, "all" lists both.
	Archived any `json:"archived,omitempty"`
	// HasBoard true asks for the sessions with a board (the reference's
	// dashboards): Switchboard's have none.
	HasBoard bool `json:"hasBoard,omitempty"`
}

// SessionsResolveParams are the params of sessions.resolve: exactly one of
// Key, SessionID and Label.
type SessionsResolveParams struct {
	Key            string  `json:"key,omitempty"`
	SessionID      string  `json:"sessionId,omitempty"`
	Label          *string `json:"label,omitempty"`
	AgentID        string  `json:"agentId,omitempty"`
	SpawnedBy      string  `json:"spawnedBy,omitempty"`
	IncludeGlobal  bool    `json:"includeGlobal,omitempty"`
	IncludeUnknown bool    `json:"includeUnknown,omitempty"`
}

// SessionsPatchParams are the params of sessions.patch. A null value
// clears the field.
type SessionsPatchParams struct {
	Key               string           `json:"key"`
	AgentID           string           `json:"agentId,omitempty"`
	ExpectedSessionID string           `json:"expectedSessionId,omitempty"`
	Label             Nullable[string] `json:"label,omitzero"`
	Model             Nullable[string] `json:"model,omitzero"`
	ThinkingLevel     Nullable[string] `json:"thinkingLevel,omitzero"`
	VerboseLevel      Nullable[string] `json:"verboseLevel,omitzero"`
	ElevatedLevel     Nullable[string] `json:"elevatedLevel,omitzero"`
	SendPolicy        Nullable[any]    `json:"sendPolicy,omitzero"`
	SpawnedBy         Nullable[string] `json:"spawnedBy,omitzero"`
	SpawnDepth        Nullable[int]    `json:"spawnDepth,omitzero"`
	// Archived archives the session (true) or restores it (false).
	Archived *bool `json:"archived,omitempty"`
}

// SessionsResetParams are the params of sessions.reset.
type SessionsResetParams struct {
	Key               string `json:"key"`
	AgentID           string `json:"agentId,omitempty"`
	Reason            string `json:"reason,omitempty"` // "new" or "reset"
	ExpectedSessionID string `json:"expectedSessionId,omitempty"`
}

// SessionsDeleteParams are the params of sessions.delete.
type SessionsDeleteParams struct {
	Key                string `json:"key"`
	AgentID            string `json:"agentId,omitempty"`
	DeleteTranscript   *bool  `json:"deleteTranscript,omitempty"`
	EmitLifecycleHooks *bool  `json:"emitLifecycleHooks,omitempty"`
	ArchivedOnly       bool   `json:"archivedOnly,omitempty"`
	ExpectedSessionID  string `json:"expectedSessionId,omitempty"`
}

// SessionsCreateParams are the params of sessions.create.
type SessionsCreateParams struct {
	Key         string `json:"key,omitempty"`
	AgentID     string `json:"agentId,omitempty"`
	Label       string `json:"label,omitempty"`
	DisplayName string `json:"displayName,omitempty"`
	Model       string `json:"model,omitempty"`
	// ThinkingLevel is the session's thinking level, as sessions.patch
	// sets it.
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
	// Message, when set, is the session's first turn, sent as chat.send
	// sends it with IdempotencyKey (generated when empty) as the runId.
	Message        string `json:"message,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// ChatSendParams are the params of chat.send.
type ChatSendParams struct {
	SessionKey     string            `json:"sessionKey"`
	Message        string            `json:"message"`
	IdempotencyKey string            `json:"idempotencyKey"`
	AgentID        string            `json:"agentId,omitempty"`
	SessionID      string            `json:"sessionId,omitempty"`
	Thinking       string            `json:"thinking,omitempty"`
	Deliver        bool              `json:"deliver,omitempty"`
	Attachments    []json.RawMessage `json:"attachments,omitempty"`
	TimeoutMs      *int64            `json:"timeoutMs,omitempty"`
	QueueMode      string            `json:"queueMode,omitempty"`
}

// SessionsSearchParams are the params of sessions.search (the
// reference's shape).
type SessionsSearchParams struct {
	Query   string `json:"query"`
	AgentID string `json:"agentId,omitempty"`
	// SessionKeys limits the search to these sessions (1..200); empty
	// searches the most recently updated sessions (of AgentID, if set).
	SessionKeys []string `json:"sessionKeys,omitempty"`
	// Limit is 1..25; 0 means 10.
	Limit int `json:"limit,omitempty"`
}

// SessionsSearchResult is the result of sessions.search: hits newest
// first, from the sessions' current transcripts and the ones they had
// before resets.
type SessionsSearchResult struct {
	Results []SessionsSearchHit `json:"results"`
	// Truncated is set when the scan stopped at its bound before the
	// oldest entry.
	Truncated bool `json:"truncated,omitempty"`
}

// SessionsSearchHit is one user or assistant message containing the query.
type SessionsSearchHit struct {
	SessionKey string `json:"sessionKey"`
	SessionID  string `json:"sessionId"`
	MessageID  string `json:"messageId"`
	Role       string `json:"role"`
	Timestamp  int64  `json:"timestamp"`
	// Snippet is the text around the first match.
	Snippet string `json:"snippet"`
	// Score is how many times the query occurs in the message.
	Score float64 `json:"score"`
}

// SessionsSendParams are the params of sessions.send.
type SessionsSendParams struct {
	Key            string            `json:"key"`
	Message        string            `json:"message"`
	AgentID        string            `json:"agentId,omitempty"`
	Thinking       string            `json:"thinking,omitempty"`
	Attachments    []json.RawMessage `json:"attachments,omitempty"`
	TimeoutMs      *int64            `json:"timeoutMs,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty"`
}

// ChatHistoryParams are the params of chat.history.
type ChatHistoryParams struct {
	SessionKey string `json:"sessionKey"`
	AgentID    string `json:"agentId,omitempty"`
	// SessionID reads that transcript of the key: the current one or one
	// it continues after a reset (an archived one).
	SessionID string `json:"sessionId,omitempty"`
	// Limit is 1..1000; nil means 200.
	Limit *int `json:"limit,omitempty"`
	// Offset pages backward: the newest Offset entries of the transcript
	// are skipped (the reference's numeric paging; see NextOffset).
	Offset *int `json:"offset,omitempty"`
	// MessageID anchors the page: it ends at that entry (of SessionID's
	// transcript, or the current one).
	MessageID string `json:"messageId,omitempty"`
	// HistoryCursor continues a page from NextHistoryCursor, across resets
	// (Switchboard's).
	HistoryCursor string `json:"historyCursor,omitempty"`
	// Accepted for the reference's clients and not used.
	Cursor        string          `json:"cursor,omitempty"`
	PendingBefore json.RawMessage `json:"pendingBefore,omitempty"`
	InputRunIDs   []string        `json:"inputRunIds,omitempty"`
	MaxChars      *int            `json:"maxChars,omitempty"`
	MaxBytes      *int            `json:"maxBytes,omitempty"`
}

// ChatAbortParams are the params of chat.abort.
type ChatAbortParams struct {
	SessionKey       string `json:"sessionKey"`
	RunID            string `json:"runId,omitempty"`
	AgentID          string `json:"agentId,omitempty"`
	PreserveSideRuns bool   `json:"preserveSideRuns,omitempty"`
}

// SessionsAbortParams are the params of sessions.abort.
type SessionsAbortParams struct {
	Key         string `json:"key,omitempty"`
	RunID       string `json:"runId,omitempty"`
	AgentID     string `json:"agentId,omitempty"`
	ClearQueued bool   `json:"clearQueued,omitempty"`
}

// SessionsExportParams are the params of sessions.export.
type SessionsExportParams struct {
	Key     string `json:"key"`
	AgentID string `json:"agentId,omitempty"`
}

// ToolsInvokeParams are the params of tools.invoke: the tool, its
// arguments, and the session it acts for ("" = none; "main" is the default
// agent's main session).
type ToolsInvokeParams struct {
	Tool string `json:"tool,omitempty"`
	// Name is the reference's field for the tool; it wins over Tool.
	Name           string          `json:"name,omitempty"`
	Action         string          `json:"action,omitempty"`
	Args           json.RawMessage `json:"args,omitempty"`
	SessionKey     string          `json:"sessionKey,omitempty"`
	AgentID        string          `json:"agentId,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
}

// ChatInjectParams are the params of chat.inject.
type ChatInjectParams struct {
	SessionKey string `json:"sessionKey"`
	Message    string `json:"message"`
	Label      string `json:"label,omitempty"`
}

// InputProvenance marks agent input that did not come from a person.
type InputProvenance struct {
	Kind             string `json:"kind"`
	SourceSessionKey string `json:"sourceSessionKey,omitempty"`
	SourceChannel    string `json:"sourceChannel,omitempty"`
	SourceTool       string `json:"sourceTool,omitempty"`
}

// AgentParams are the params of agent.
type AgentParams struct {
	Message           string          `json:"message"`
	IdempotencyKey    string          `json:"idempotencyKey"`
	AgentID           string          `json:"agentId,omitempty"`
	SessionKey        string          `json:"sessionKey,omitempty"`
	SessionID         string          `json:"sessionId,omitempty"`
	Thinking          string          `json:"thinking,omitempty"`
	Deliver           bool            `json:"deliver,omitempty"`
	BestEffortDeliver bool            `json:"bestEffortDeliver,omitempty"`
	Channel           string          `json:"channel,omitempty"`
	To                string          `json:"to,omitempty"`
	ReplyTo           string          `json:"replyTo,omitempty"`
	AccountID         string          `json:"accountId,omitempty"`
	ThreadID          json.RawMessage `json:"threadId,omitempty"` // string or number
	// Timeout is the run limit in seconds; 0 means none, nil the default.
	Timeout           *int64            `json:"timeout,omitempty"`
	Lane              string            `json:"lane,omitempty"`
	ExtraSystemPrompt string            `json:"extraSystemPrompt,omitempty"`
	Label             string            `json:"label,omitempty"`
	SpawnedBy         string            `json:"spawnedBy,omitempty"`
	InputProvenance   *InputProvenance  `json:"inputProvenance,omitempty"`
	InternalEvents    []json.RawMessage `json:"internalEvents,omitempty"`
	WorkspaceDir      string            `json:"workspaceDir,omitempty"`
	Model             string            `json:"model,omitempty"`
	Provider          string            `json:"provider,omitempty"`
	Attachments       []json.RawMessage `json:"attachments,omitempty"`
	PromptMode        string            `json:"promptMode,omitempty"`
}

// AgentWaitParams are the params of agent.wait.
type AgentWaitParams struct {
	RunID string `json:"runId"`
	// TimeoutMs defaults to 30000.
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
}

// LogsTailParams are the params of logs.tail: a byte cursor from an
// earlier call (nil reads the end of the file), and the line and byte
// bounds (defaults 500 and 250000).
type LogsTailParams struct {
	Cursor   *int64 `json:"cursor,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	MaxBytes int    `json:"maxBytes,omitempty"`
}

// AgentsListParams are the params of agents.list (none).
type AgentsListParams struct{}

// methodSchemaTable is the table methodSchemas returns, built on first
// use (the package has no init-time work).
var methodSchemaTable = lazy.Value[map[string]*Schema]{New: buildMethodSchemas}

// methodSchemas returns the table of each method's params schema (all
// closed).
func methodSchemas() map[string]*Schema { return methodSchemaTable.Get() }

// buildMethodSchemas builds the table of each method's params schema.
func buildMethodSchemas() map[string]*Schema {
	m := baseMethodSchemas()
	// The other files' methods, in the order their init funcs ran.
	for _, add := range []func(map[string]*Schema){
		addActivitySchemas, addApprovalsSchemas, addChannelsSchemas, addCompactSchemas, addControluiSchemas,
		addEdgesSchemas, addMcpSchemas, addSteerSchemas, addNodesSchemas, addUiviewsSchemas, addAbsentSchemas, addWatchSchemas,
	} {
		add(m)
	}
	return m
}

// addSteerSchemas: sessions.steer takes chat.send's params.
func addSteerSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodSessionsSteer] = methodSchemas[MethodChatSend]
}

// baseMethodSchemas are the schemas of the methods listed here.
func baseMethodSchemas() map[string]*Schema {
	return map[string]*Schema{
		MethodConnect:        connectSchema(),
		MethodHealth:         Object(nil, P("probe", Bool())),
		MethodStatus:         Object(nil),
		MethodSystemPresence: Object(nil),
		MethodLastHeartbeat:  Object(nil),
		MethodUsageStatus:    OpenObject(),
		MethodUsageCost:      OpenObject(),
		MethodSessionsUsage:  OpenObject(),
		MethodModelsList:     OpenObject(),
		MethodConfigGet:      Object(nil),
		MethodSessionsMessagesSubscribe: Object([]string{"key"},
			P("key", NonEmptyStr()), P("agentId", Str()), P("includeApprovals", Bool())),
		MethodSessionsMessagesUnsubscribe: Object([]string{"key"},
			P("key", NonEmptyStr()), P("agentId", Str())),
		MethodLogsTail: Object(nil,
			P("cursor", Int(0)),
			P("limit", IntRange(1, 5000)),
			P("maxBytes", IntRange(1, 1_000_000)),
		),
		MethodSessionsList: Object(nil,
			P("limit", Int(1)),
			P("offset", Int(0)),
			P("activeMinutes", Int(1)),
			P("activeOnly", Bool()),
			P("sortBy", Enum("updatedAt", "lastInteractionAt", "activity")),
			P("includeGlobal", Bool()),
			P("includeUnknown", Bool()),
			P("excludeSubagents", Bool()),
			P("excludeCron", Bool()),
			P("excludeSystem", Bool()),
			P("configuredAgentsOnly", Bool()),
			P("includeDerivedTitles", Bool()),
			P("includeLastMessage", Bool()),
			P("includeActivitySummary", Bool()),
			P("label", Str()),
			P("projectId", Str()),
			P("workspaceDir", Str()),
			P("group", Str()),
			P("pinned", Bool()),
			P("creatorId", Str()),
			P("ownerId", Str()),
			P("involvingMe", Bool()),
			P("spawnedBy", Str()),
			P("agentId", Str()),
			P("search", Str()),
			P("archived", Any()),
			P("hasBoard", Bool()),
			P("requireLastInteraction", Any()),
			P("boardFace", Any()),
			P("ownerFirst", Any()),
			P("involvingProfileId", Any()),
			P("includePeople", Any()),
		),
		MethodSessionsResolve: Object(nil,
			P("key", NonEmptyStr()),
			P("sessionId", NonEmptyStr()),
			P("label", Str()),
			P("agentId", Str()),
			P("spawnedBy", Str()),
			P("includeGlobal", Bool()),
			P("includeUnknown", Bool()),
		),
		MethodSessionsPatch: Object([]string{"key"},
			P("key", NonEmptyStr()),
			P("agentId", Str()),
			P("expectedSessionId", Str()),
			P("label", OrNull(Str())),
			P("model", OrNull(Str())),
			P("thinkingLevel", OrNull(Str())),
			P("verboseLevel", OrNull(Str())),
			P("sendPolicy", Any()),
			P("spawnedBy", OrNull(Str())),
			P("spawnDepth", OrNull(Int(0))),
			P("expectedLifecycleRevision", Any()),
			P("expectedPermissionMode", Any()),
			P("expectedToolOverrides", Any()),
			P("expectedMarkedUnreadAt", Any()),
			P("icon", Any()),
			P("color", Any()),
			P("category", Any()),
			P("boardFace", Any()),
			P("statusNote", Any()),
			P("attention", Any()),
			P("ttlMinutes", Any()),
			P("archived", Bool()),
			P("pinned", Any()),
			P("unread", Any()),
			P("contextWindow", Any()),
			P("fastMode", Any()),
			P("toolOverrides", Any()),
			P("traceLevel", Any()),
			P("reasoningLevel", Any()),
			P("responseUsage", Any()),
			P("elevatedLevel", OrNull(Str())),
			P("execHost", Any()),
			P("execSecurity", Any()),
			P("execAsk", Any()),
			P("execNode", Any()),
			P("permissionMode", Any()),
			P("completionOwnerSessionKey", Any()),
			P("inheritedToolPolicyVersion", Any()),
			P("inheritedToolAllow", Any()),
			P("inheritedToolDeny", Any()),
			P("groupActivation", Any()),
		),
		MethodSessionsReset: Object([]string{"key"},
			P("key", NonEmptyStr()),
			P("agentId", Str()),
			P("reason", Enum("new", "reset")),
			P("expectedSessionId", Str()),
		),
		MethodSessionsDelete: Object([]string{"key"},
			P("key", NonEmptyStr()),
			P("agentId", Str()),
			P("deleteTranscript", Bool()),
			P("emitLifecycleHooks", Bool()),
			P("archivedOnly", Bool()),
			P("expectedSessionId", Str()),
		),
		MethodSessionsCreate: Object(nil,
			P("key", NonEmptyStr()),
			P("agentId", Str()),
			P("label", Str()),
			P("displayName", &Schema{Type: JSONString, MinLength: 1, MaxLength: 500}),
			P("model", NonEmptyStr()),
			P("thinkingLevel", NonEmptyStr()),
			P("message", Str()),
			P("idempotencyKey", NonEmptyStr()),
			// The reference's other create options (its Control UI sends some
			// of them): accepted, unused.
			P("category", Str()), P("contextWindow", Str()), P("fastMode", Any()),
			P("permissionMode", Str()), P("toolOverrides", OpenObject()), P("incognito", Bool()),
			P("visibility", Str()), P("catalogId", Str()), P("parentSessionKey", Str()),
			P("spawnDepth", Int(1)), P("fork", Bool()), P("forkFrom", Str()),
			P("emitCommandHooks", Bool()), P("succeedsParent", Bool()), P("task", Str()),
			P("attachments", Any()), P("projectId", Str()), P("projectGitUrl", Str()),
			P("worktree", Any()), P("worktreeBaseRef", Str()), P("worktreeName", Str()),
			P("execNode", Str()), P("cwd", Str()),
		),
		MethodChatSend: Object([]string{"sessionKey", "message", "idempotencyKey"},
			P("sessionKey", NonEmptyStr()),
			P("message", Str()),
			P("idempotencyKey", NonEmptyStr()),
			P("agentId", Str()),
			P("sessionId", Str()),
			P("thinking", Str()),
			P("deliver", Bool()),
			P("attachments", Array()),
			P("timeoutMs", Int(0)),
			P("queueMode", Enum("steer", "followup", "collect", "interrupt")),
			P("intent", Any()),
			P("fastMode", Any()),
			P("fastAutoOnSeconds", Any()),
			P("originatingChannel", Any()),
			P("originatingTo", Any()),
			P("originatingAccountId", Any()),
			P("originatingThreadId", Any()),
			P("replyToId", Any()),
			P("toolBindings", Any()),
			P("systemInputProvenance", Any()),
			P("systemProvenanceReceipt", Any()),
			P("suppressCommandInterpretation", Any()),
			P("expectedLeafEntryId", Any()),
			P("expectedSessionRoutingContract", Any()),
			P("expectedPermissionMode", Any()),
			P("expectedToolOverrides", Any()),
		),
		MethodChatHistory: Object([]string{"sessionKey"},
			P("sessionKey", NonEmptyStr()),
			P("agentId", Str()),
			P("sessionId", Str()),
			P("limit", &Schema{Type: JSONInteger, HasMin: true, Min: 1, HasMax: true, Max: 1000}),
			P("maxBytes", Int(1)),
			P("maxChars", Int(1)),
			P("offset", Int(0)),
			P("cursor", Str()),
			P("messageId", Str()),
			P("pendingBefore", Any()),
			P("inputRunIds", StrArray()),
			P("historyCursor", Str()),
		),
		MethodChatAbort: Object([]string{"sessionKey"},
			P("sessionKey", NonEmptyStr()),
			P("runId", Str()),
			P("agentId", Str()),
			P("preserveSideRuns", Bool()),
		),
		MethodSessionsAbort: Object(nil,
			P("key", Str()),
			P("runId", Str()),
			P("agentId", Str()),
			P("clearQueued", Bool()),
		),
		MethodSessionsExport: Object([]string{"key"},
			P("key", NonEmptyStr()),
			P("agentId", Str()),
		),
		MethodSessionsSearch: Object([]string{"query"},
			P("query", &Schema{Type: JSONString, MinLength: 1, MaxLength: 4096}),
			P("agentId", NonEmptyStr()),
			P("sessionKeys", &Schema{Type: JSONArray, Items: NonEmptyStr()}),
			P("limit", &Schema{Type: JSONInteger, HasMin: true, Min: 1, HasMax: true, Max: 25}),
		),
		MethodSessionsSend: Object([]string{"key", "message"},
			P("key", NonEmptyStr()),
			P("agentId", NonEmptyStr()),
			P("message", Str()),
			P("thinking", Str()),
			P("attachments", Array()),
			P("timeoutMs", Int(0)),
			P("idempotencyKey", NonEmptyStr()),
		),
		MethodToolsInvoke: Object(nil,
			P("tool", Str()),
			P("name", Str()),
			P("action", Str()),
			P("args", Any()),
			P("sessionKey", Str()),
			P("agentId", Str()),
			P("idempotencyKey", Str()),
			P("confirm", Bool()),
			P("dryRun", Bool()),
		),
		MethodChatInject: Object([]string{"sessionKey", "message"},
			P("sessionKey", NonEmptyStr()),
			P("message", NonEmptyStr()),
			P("label", &Schema{Type: JSONString, MaxLength: 100}),
		),
		MethodAgent: Object([]string{"message", "idempotencyKey"},
			P("message", NonEmptyStr()),
			P("idempotencyKey", NonEmptyStr()),
			P("agentId", Str()),
			P("sessionKey", Str()),
			P("sessionId", Str()),
			P("thinking", Str()),
			P("deliver", Bool()),
			P("bestEffortDeliver", Bool()),
			P("channel", Str()),
			P("to", Str()),
			P("replyTo", Str()),
			P("accountId", Str()),
			P("threadId", Any()),
			P("timeout", Int(0)),
			P("lane", Str()),
			P("extraSystemPrompt", Str()),
			P("label", Str()),
			P("spawnedBy", Str()),
			P("inputProvenance", Object([]string{"kind"},
				P("kind", NonEmptyStr()),
				P("sourceSessionKey", Str()),
				P("sourceChannel", Str()),
				P("sourceTool", Str()),
			)),
			P("internalEvents", Array()),
			P("workspaceDir", Str()),
			P("model", Str()),
			P("provider", Str()),
			P("attachments", Array()),
			P("promptMode", Enum("full", "minimal", "none")),
		),
		MethodAgentWait: Object([]string{"runId"},
			P("runId", NonEmptyStr()),
			P("timeoutMs", Int(0)),
		),
		MethodAgentsList: Object(nil),
		MethodSubagentsList: Object(nil,
			P("requesterKey", Str()),
			P("active", Bool()),
			P("limit", IntRange(1, 10000)),
		),
		MethodSubagentsKill: Object([]string{"runId"},
			P("runId", NonEmptyStr()),
		),
		MethodAnnouncesList: Object(nil,
			P("status", Enum(AnnounceStatusPending, AnnounceStatusDelivered, AnnounceStatusDead, AnnounceStatusAll)),
			P("limit", IntRange(1, 10000)),
		),
		MethodAnnouncesRedeliver: Object([]string{"id"},
			P("id", NonEmptyStr()),
		),
	}
}

// DecodeParams validates params (nil is treated as {}) against the schema
// of method and unmarshals them into v (nil skips that). A failure is a
// *ParamsError reading "invalid <method> params: <reason>".
func DecodeParams(method string, params json.RawMessage, v any) error {
	s := methodSchemas()[method]
	if s == nil {
		return &ParamsError{Method: method, Err: &ValidationError{Issues: []Issue{{Message: "unknown method"}}}}
	}
	if err := decodeInto(s, params, v); err != nil {
		return &ParamsError{Method: method, Err: err}
	}
	return nil
}

// ParamsError reports params that do not match their method's schema.
type ParamsError struct {
	Method string
	Err    error // usually a *ValidationError
}

// Error returns "invalid <method> params: <reason>".
func (e *ParamsError) Error() string {
	return "invalid " + e.Method + " params: " + e.Err.Error()
}

// Unwrap returns the validation error.
func (e *ParamsError) Unwrap() error { return e.Err }

// Sub-agent administration methods (Switchboard's own; the reference
// manages sub-agents through slash commands).
const (
	// MethodSubagentsList lists spawned sub-agent runs.
	MethodSubagentsList = "subagents.list"
	// MethodSubagentsKill aborts a sub-agent run and its descendants.
	MethodSubagentsKill = "subagents.kill"
	// MethodAnnouncesList lists sub-agent completion announces.
	MethodAnnouncesList = "announces.list"
	// MethodAnnouncesRedeliver queues an undelivered announce again.
	MethodAnnouncesRedeliver = "announces.redeliver"
)

// Announce statuses as announces.list filters and reports them; "all"
// only filters.
const (
	AnnounceStatusPending   = "pending"
	AnnounceStatusDelivered = "delivered"
	AnnounceStatusDead      = "dead"
	AnnounceStatusAll       = "all"
)

// SubagentsListParams are the params of subagents.list: the children of
// one requester session ("" = every requester; "main" is the default
// agent's main session), with Active only those still running.
type SubagentsListParams struct {
	RequesterKey string `json:"requesterKey,omitempty"`
	Active       bool   `json:"active,omitempty"`
	// Limit bounds the rows (default DefaultSubagentsLimit).
	Limit *int `json:"limit,omitempty"`
}

// DefaultSubagentsLimit is subagents.list's page when no limit is given.
const DefaultSubagentsLimit = 500

// SubagentsKillParams are the params of subagents.kill.
type SubagentsKillParams struct {
	RunID string `json:"runId"`
}

// AnnouncesListParams are the params of announces.list: Status is
// pending, delivered, dead or all; "" means dead.
type AnnouncesListParams struct {
	Status string `json:"status,omitempty"`
	// Limit bounds the rows (default DefaultAnnouncesLimit).
	Limit *int `json:"limit,omitempty"`
}

// DefaultAnnouncesLimit is announces.list's page when no limit is given.
const DefaultAnnouncesLimit = 500

// AnnouncesRedeliverParams are the params of announces.redeliver.
type AnnouncesRedeliverParams struct {
	ID string `json:"id"`
}
