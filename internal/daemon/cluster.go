package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/cluster"
	"github.com/switchboardhq/switchboard/internal/doctor"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
)

// newNode makes this gateway a node of the cluster on its PostgreSQL
// database. The node id is storage.nodeId (SWITCHBOARD_NODE_ID), or
// <hostname>:<port>: a node restarted on the same host and port is the
// same node, and adopts its own unfinished runs at once. With port 0 (an
// ephemeral port) the id gets a random part.
func newNode(ss settings.StorageSettings, pg *postgres.Store, addr net.Addr, ephemeral bool, version string, onAdopt func(context.Context, []*store.Run), onJoin func(context.Context, string), log *slog.Logger) (*cluster.Node, error) {
	id := ss.NodeID
	if id == "" {
		host, _ := os.Hostname()
		host = strings.ReplaceAll(strings.TrimSpace(host), " ", "-")
		if host == "" {
			host = "node"
		}
		// A port the system chose may be another node's later: the id
		// then gets a random part instead.
		id = host + ":" + uuid.NewString()[:8]
		if a, ok := addr.(*net.TCPAddr); ok && !ephemeral {
			id = host + ":" + strconv.Itoa(a.Port)
		}
	}
	return cluster.New(cluster.Config{
		Store: pg, ID: id, Address: addr.String(), Version: version, Lease: ss.Lease,
		OnAdopt: onAdopt, OnJoin: onJoin, Logger: log,
		// The children of a sessions_spawn burst spread over idle nodes.
		Spread: sessionkey.IsSubagent,
	})
}

// nodesView is nodes.list's answer on a cluster.
func nodesView(ctx context.Context, n *cluster.Node) (*wire.NodesList, error) {
	rows, err := n.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := &wire.NodesList{NodeID: n.ID(), Backend: settings.BackendPostgres, LeaseMs: n.Lease().Milliseconds(), Nodes: []wire.Node{}}
	for _, r := range rows {
		out.Nodes = append(out.Nodes, wire.Node{
			NodeID: r.ID, Address: r.Address, Version: r.Version, State: r.State, Alive: r.Alive, Self: r.ID == n.ID(),
			StartedAtMs: r.StartedAt.UnixMilli(), HeartbeatAtMs: r.HeartbeatAt.UnixMilli(), LeaseExpiresAtMs: r.LeaseUntil.UnixMilli(),
			ActiveRuns: r.ActiveRuns, QueuedRuns: r.QueuedRuns, Lanes: r.Lanes,
		})
	}
	return out, nil
}

// checkWorkspaces looks for the markers of the other live nodes in the
// agents' workspaces (see workspaces.go) and says loudly when one is
// missing: a session's next turn on that node would not see the files
// this one wrote. It reports whether every workspace is shared.
func checkWorkspaces(ctx context.Context, n *cluster.Node, workspaces []string, log *slog.Logger) bool {
	rows, err := n.Nodes(ctx)
	if err != nil {
		log.Warn("workspace sharing not checked", "err", err)
		return false
	}
	var peers []string
	for _, r := range rows {
		if r.Alive && r.ID != n.ID() {
			peers = append(peers, r.ID)
		}
	}
	if len(peers) == 0 {
		return true
	}
	if missing := doctor.UnsharedWorkspaces(workspaces, peers); len(missing) > 0 {
		log.Error("AGENT WORKSPACES ARE NOT SHARED between the nodes of this cluster: a turn on one node does not see the files another node's turn wrote",
			"detail", doctor.DescribeUnshared(missing), "fix", doctor.SharedWorkspacesFix)
		return false
	}
	log.Info("agent workspaces are shared with every live node", "nodes", peers, "workspaces", workspaces)
	return true
}
