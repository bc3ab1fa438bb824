package daemon

import (
	"context"
	"log/slog"
	"net"

	"github.com/switchboardhq/switchboard/internal/cluster"
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
	return cluster.New(cluster.Config{
		Store: pg, ID: cluster.NodeID(ss.NodeID, addr, ephemeral), Address: addr.String(), Version: version, Lease: ss.Lease,
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

// nodeAlive reports whether node id holds a live lease in n's cluster: a
// node whose lease ended, or whose row an adoption removed, is not alive
// (the sub-agent manager then takes over its announce claims at once).
func nodeAlive(n *cluster.Node) func(ctx context.Context, id string) (bool, error) {
	return func(ctx context.Context, id string) (bool, error) {
		rows, err := n.Nodes(ctx)
		if err != nil {
			return false, err
		}
		for _, r := range rows {
			if r.ID == id {
				return r.Alive, nil
			}
		}
		return false, nil
	}
}
