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

// addWatchSchemas adds the schemas of this file's methods.
func addWatchSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodRunsWatch] = Object([]string{"runId"},
		P("runId", NonEmptyStr()),
		P("afterSeq", Int(0)),
		P("timeoutMs", Int(0)),
	)
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
