package doctor

import (
	"context"
	"log/slog"

	"github.com/switchboardhq/switchboard/internal/store/postgres"
)

// Nodes lists the nodes of a cluster (cluster.Node).
type Nodes interface {
	ID() string
	Nodes(ctx context.Context) ([]postgres.NodeInfo, error)
}

// CheckWorkspaces looks for the markers of the other live nodes in the
// agents' workspaces (see WriteNodeMarkers) and says loudly when one is
// missing: a session's next turn on that node would not see the files
// this one wrote. It reports whether every workspace is shared.
func CheckWorkspaces(ctx context.Context, n Nodes, workspaces []string, log *slog.Logger) bool {
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
	if missing := UnsharedWorkspaces(workspaces, peers); len(missing) > 0 {
		log.Error("AGENT WORKSPACES ARE NOT SHARED between the nodes of this cluster: a turn on one node does not see the files another node's turn wrote",
			"detail", DescribeUnshared(missing), "fix", SharedWorkspacesFix)
		return false
	}
	log.Info("agent workspaces are shared with every live node", "nodes", peers, "workspaces", workspaces)
	return true
}
