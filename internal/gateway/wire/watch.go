package wire

// MethodRunsWatch follows one run (Switchboard's own method): the run's
// events after AfterSeq come to the calling connection as EventRunsWatch
// frames, in order, and the call answers with the run's final once it ended
// (at once for a run already ended). A client that lost its connection
// calls it again, on any node, with the last seq it saw, and gets what
// followed without gap or duplicate, and the final exactly once.
const MethodRunsWatch = "runs.watch"

// EventRunsWatch carries one event of a watched run (an AgentEvent whose
// seq is the run's own), sent only to the connection that watches it, so
// it never doubles the "agent" events every client of the session gets.
const EventRunsWatch = "runs.watch"

// MethodSessionsWatch follows every run of one session (Switchboard's own
// method): the session's events after AfterSeq come to the calling
// connection as EventSessionsWatch frames, in order, each with its
// sessionSeq; the call answers once the end of UntilRunID was sent (or at
// TimeoutMs, or never: until the connection closes). A client that lost
// its connection calls it again with the last sessionSeq it saw and gets
// what followed without gap or duplicate while the node's log holds the
// session's events (the numbers are the node's own: resume on the same
// node).
const MethodSessionsWatch = "sessions.watch"

// EventSessionsWatch carries one event of a watched session
// (SessionWatchEvent), sent only to the connection that watches it.
const EventSessionsWatch = "sessions.watch"

// addWatchSchemas adds the schemas of this file's methods.
func addWatchSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodRunsWatch] = Object([]string{"runId"},
		P("runId", NonEmptyStr()),
		P("afterSeq", Int(0)),
		P("timeoutMs", Int(0)),
	)
	methodSchemas[MethodSessionsWatch] = Object([]string{"key"},
		P("key", NonEmptyStr()),
		P("afterSeq", Int(0)),
		P("untilRunId", NonEmptyStr()),
		P("timeoutMs", Int(0)),
	)
}

// SessionsWatchParams are sessions.watch's params: the session, the last
// sessionSeq the client saw (0: every event the node holds), the run
// whose end ends the call, and how long to follow at most.
type SessionsWatchParams struct {
	Key        string `json:"key"`
	AfterSeq   int64  `json:"afterSeq,omitempty"`
	UntilRunID string `json:"untilRunId,omitempty"`
	TimeoutMs  *int64 `json:"timeoutMs,omitempty"`
}

// SessionWatchEvent is one event of a watched session: the run's event
// (its seq the run's own) and its place in the session's stream.
type SessionWatchEvent struct {
	AgentEvent
	SessionSeq int64 `json:"sessionSeq"`
}

// SessionsWatchResult is sessions.watch's answer: the session, the last
// sessionSeq sent (the client's next afterSeq) and whether the call ended
// at its timeout.
type SessionsWatchResult struct {
	Key      string `json:"key"`
	Seq      int64  `json:"seq"`
	TimedOut bool   `json:"timedOut,omitempty"`
}

// RunsWatchParams are runs.watch's params: the run, the last seq the client
// saw (0: from the start), and how long to follow it (absent: until it
// ends or the connection closes).
type RunsWatchParams struct {
	RunID     string `json:"runId"`
	AfterSeq  int64  `json:"afterSeq,omitempty"`
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
}

// RunsWatchResult is runs.watch's answer: agent.wait's fields, the seq of
// the run's end (the client's next afterSeq while Status is "timeout", its
// last event's otherwise) and the run's reply.
type RunsWatchResult struct {
	AgentWaitResult
	Seq  int64  `json:"seq"`
	Text string `json:"text,omitempty"`
}
