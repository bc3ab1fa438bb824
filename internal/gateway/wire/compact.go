package wire

// MethodSessionsCompact compacts a session's context now (the reference's
// sessions.compact RPC).
const MethodSessionsCompact = "sessions.compact"

// SessionsCompactParams are the params of sessions.compact. With MaxLines
// the session's context is truncated to its last MaxLines entries
// instead of summarised.
type SessionsCompactParams struct {
	Key      string `json:"key"`
	AgentID  string `json:"agentId,omitempty"`
	MaxLines *int   `json:"maxLines,omitempty"`
}

// SessionsCompactResult is the result of sessions.compact. Result is set
// for a summarising compaction that ran, Kept for a truncation.
type SessionsCompactResult struct {
	OK        bool           `json:"ok"`
	Key       string         `json:"key"`
	Compacted bool           `json:"compacted"`
	Reason    string         `json:"reason,omitempty"`
	Result    *CompactDetail `json:"result,omitempty"`
	Kept      *int           `json:"kept,omitempty"`
}

// CompactDetail is what a compaction wrote.
type CompactDetail struct {
	TokensBefore     int    `json:"tokensBefore"`
	TokensAfter      int    `json:"tokensAfter"`
	Summary          string `json:"summary"`
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	Details          any    `json:"details,omitempty"`
}

// addCompactSchemas adds the schemas of this file's methods.
func addCompactSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodSessionsCompact] = Object([]string{"key"},
		P("key", NonEmptyStr()),
		P("agentId", Str()),
		P("maxLines", Int(1)),
	)
}
