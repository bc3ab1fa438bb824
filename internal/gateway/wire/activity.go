package wire

// MethodRunsActive reports what the gateway is doing now: the runs running
// and queued, and the recently updated sessions with their tokens, cost and
// spawn parent (Switchboard's own method; `switchboard top`).
const MethodRunsActive = "runs.active"

// addActivitySchemas adds the schemas of this file's methods.
func addActivitySchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodRunsActive] = Object(nil, P("limit", IntRange(1, 1000)))
}

// LaneMain is the lane runs.active reports for a run in its session's own
// lane (a run submitted with no lane).
const LaneMain = "main"

// ActiveRun is one running or queued run of runs.active.
type ActiveRun struct {
	RunID      string `json:"runId"`
	SessionKey string `json:"sessionKey"`
	AgentID    string `json:"agentId,omitempty"`
	Lane       string `json:"lane"`
	// Status is "running" or "queued".
	Status    string `json:"status"`
	CreatedAt int64  `json:"createdAt"`           // ms
	StartedAt int64  `json:"startedAt,omitempty"` // ms; 0 while queued
}

// ActivitySession is one session of runs.active: its usage summed over its
// runs, and the session that spawned it (the root of a tree has none).
type ActivitySession struct {
	Key          string  `json:"key"`
	AgentID      string  `json:"agentId,omitempty"`
	SpawnedBy    string  `json:"spawnedBy,omitempty"`
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
	TotalTokens  int64   `json:"totalTokens"`
	Cost         float64 `json:"cost"`
	Runs         int     `json:"runs"`
	UpdatedAt    int64   `json:"updatedAt"` // ms
}

// RunsActiveResult is runs.active's result. Sessions holds the limit most
// recently updated sessions plus every session with an active run and the
// sessions that spawned those, so that every listed session's tree root is
// listed too.
type RunsActiveResult struct {
	TS       int64             `json:"ts"`
	Runs     []ActiveRun       `json:"runs"`
	Sessions []ActivitySession `json:"sessions"`
}
