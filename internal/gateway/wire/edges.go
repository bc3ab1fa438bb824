package wire

// MethodSessionsEdges lists the recent messages between sessions (a
// sessions_send, a reply-back step, a sub-agent's announce) that reached
// any of the given sessions, with their delivery status (Switchboard's own
// method; the web UI's switchboard view draws them as edges).
const MethodSessionsEdges = "sessions.edges"

// addEdgesSchemas adds the schemas of this file's methods.
func addEdgesSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodSessionsEdges] = Object([]string{"keys"}, P("keys", StrArray()), P("limit", IntRange(1, 1000)))
}

// MaxEdgeKeys bounds the sessions one sessions.edges call asks about.
const MaxEdgeKeys = 2000

// Edge delivery states: the message waits behind the target's run, its
// run is under way, the target answered it, or its run failed.
const (
	EdgeQueued    = "queued"
	EdgeDelivered = "delivered"
	EdgeReplied   = "replied"
	EdgeFailed    = "failed"
)

// SessionEdge is one message from a session to another.
type SessionEdge struct {
	RunID string `json:"runId"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Via is the tool that sent it ("sessions_send", "subagent_announce",
	// …), when known.
	Via       string `json:"via,omitempty"`
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	CreatedAt int64  `json:"createdAt"`         // ms
	EndedAt   int64  `json:"endedAt,omitempty"` // ms
}

// SessionsEdgesResult is the sessions.edges answer, newest first.
type SessionsEdgesResult struct {
	Edges []SessionEdge `json:"edges"`
}
