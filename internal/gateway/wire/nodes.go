package wire

// MethodNodesList lists the gateway nodes sharing this gateway's database,
// with their leases and load (Switchboard's own method; a gateway on
// SQLite is one node).
const MethodNodesList = "nodes.list"

// addNodesSchemas adds the schemas of this file's methods.
func addNodesSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodNodesList] = Object(nil)
}

// NodesList is the nodes.list result.
type NodesList struct {
	// NodeID is the node that answered.
	NodeID string `json:"nodeId"`
	// Backend is "sqlite" (one node) or "postgres".
	Backend string `json:"backend"`
	// LeaseMs is the lease length; 0 on SQLite.
	LeaseMs int64  `json:"leaseMs"`
	Nodes   []Node `json:"nodes"`
}

// Node is one gateway node of a nodes.list result.
type Node struct {
	NodeID  string `json:"nodeId"`
	Address string `json:"address,omitempty"`
	Version string `json:"version,omitempty"`
	// State is "active" or "leaving".
	State string `json:"state"`
	// Alive is whether its lease had not ended.
	Alive bool `json:"alive"`
	// Self marks the node that answered.
	Self             bool  `json:"self"`
	StartedAtMs      int64 `json:"startedAtMs"`
	HeartbeatAtMs    int64 `json:"heartbeatAtMs,omitempty"`
	LeaseExpiresAtMs int64 `json:"leaseExpiresAtMs,omitempty"`
	ActiveRuns       int   `json:"activeRuns"`
	QueuedRuns       int   `json:"queuedRuns"`
	Lanes            int   `json:"lanes"`
}
