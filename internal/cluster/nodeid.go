package cluster

import (
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// NodeID is a node's id: the configured one (storage.nodeId,
// SWITCHBOARD_NODE_ID), or <hostname>:<port> of addr, so that a node
// restarted on the same host and port is the same node and adopts its own
// unfinished runs at once. With an ephemeral port (one the system chose)
// the id gets a random part instead.
func NodeID(configured string, addr net.Addr, ephemeral bool) string {
	if configured != "" {
		return configured
	}
	host, _ := os.Hostname()
	host = strings.ReplaceAll(strings.TrimSpace(host), " ", "-")
	if host == "" {
		host = "node"
	}
	// A port the system chose may be another node's later: the id
	// then gets a random part instead.
	id := host + ":" + uuid.NewString()[:8]
	if a, ok := addr.(*net.TCPAddr); ok && !ephemeral {
		id = host + ":" + strconv.Itoa(a.Port)
	}
	return id
}
