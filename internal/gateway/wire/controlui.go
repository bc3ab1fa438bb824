package wire

import "encoding/json"

// Methods the reference's Control UI (npm openclaw, dist/control-ui) calls
// at startup and on its chat view.
const (
	// MethodChatStartup is chat.history for a chat view that opens: the
	// same params and result.
	MethodChatStartup = "chat.startup"
	// MethodSessionsDescribe returns {session: row} for an exact key,
	// {session: null} when there is no such session.
	MethodSessionsDescribe = "sessions.describe"
	// MethodSessionsSubscribe turns on sessions.changed events for the
	// connection; with sessions.list params it also returns the list.
	MethodSessionsSubscribe   = "sessions.subscribe"
	MethodSessionsUnsubscribe = "sessions.unsubscribe"
	MethodAgentIdentityGet    = "agent.identity.get"
	MethodModelsAuthStatus    = "models.authStatus"
)

// EventSessionsChanged tells sessions.subscribe connections that a
// session's row changed: {sessionKey, reason, ts}.
const EventSessionsChanged = "sessions.changed"

// EventSessionMessage carries one transcript message of a session to the
// connections subscribed to its messages (sessions.messages.subscribe).
const EventSessionMessage = "session.message"

// EventChatSendTiming tells an operator UI how its chat.send went, phase
// by phase (sent to the sending connection only).
const EventChatSendTiming = "chat.send_timing"

// SessionMessageEvent is the payload of session.message. Message is the
// message as chat.history returns it (its "__openclaw" block has the
// entry id and seq); Session is the session's row as sessions.describe
// returns it.
type SessionMessageEvent struct {
	SessionKey string          `json:"sessionKey"`
	AgentID    string          `json:"agentId,omitempty"`
	Message    json.RawMessage `json:"message"`
	MessageID  string          `json:"messageId"`
	MessageSeq int64           `json:"messageSeq"`
	Session    *SessionRow     `json:"session,omitempty"`
}

// addControluiSchemas adds the schemas of this file's methods.
func addControluiSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodChatStartup] = methodSchemas[MethodChatHistory]
	methodSchemas[MethodSessionsSubscribe] = methodSchemas[MethodSessionsList]
	methodSchemas[MethodSessionsUnsubscribe] = Object(nil)
	methodSchemas[MethodSessionsDescribe] = Object([]string{"key"},
		P("key", NonEmptyStr()), P("agentId", Str()),
		P("includeDerivedTitles", Bool()), P("includeLastMessage", Bool()))
	methodSchemas[MethodAgentIdentityGet] = Object(nil, P("agentId", Str()), P("sessionKey", Str()))
	methodSchemas[MethodModelsAuthStatus] = Object(nil, P("refresh", Bool()), P("agentId", Str()))
}

// SessionsDescribeResult is the result of sessions.describe.
type SessionsDescribeResult struct {
	Session *SessionRow `json:"session"`
}

// SessionsSubscribeResult is the result of sessions.subscribe; List is set
// when the params asked for one.
type SessionsSubscribeResult struct {
	Subscribed bool                `json:"subscribed"`
	List       *SessionsListResult `json:"list,omitempty"`
}

// AgentIdentityResult is the result of agent.identity.get.
type AgentIdentityResult struct {
	AgentID      string `json:"agentId"`
	Name         string `json:"name,omitempty"`
	NameSource   string `json:"nameSource,omitempty"` // config or default
	AvatarStatus string `json:"avatarStatus,omitempty"`
}

// ModelsAuthStatusResult is the result of models.authStatus: one row per
// configured provider. Switchboard's providers use static API keys, so
// Status is "static" (a key is configured) or "missing".
type ModelsAuthStatusResult struct {
	TS        int64                `json:"ts"`
	Providers []ProviderAuthStatus `json:"providers"`
}

// ProviderAuthStatus is one provider of ModelsAuthStatusResult.
type ProviderAuthStatus struct {
	Provider string `json:"provider"`
	Status   string `json:"status"`
	// Profiles are OAuth profiles; Switchboard has none.
	Profiles []any `json:"profiles"`
}
