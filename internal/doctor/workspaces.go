package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/settings"
)

// On a cluster the turns of one session run on whichever node holds its
// lane, so an agent's workspace must be the same directory on every node
// (shared storage mounted at the same path). Each node proves it: serve
// writes a marker named after the node id under every agent workspace,
// and serve (at start and whenever a node joins) and doctor look for the
// markers of the other live nodes. A marker missing means the workspace
// is not shared with that node: serve warns loudly, doctor fails.

// markerDir is where the node markers live inside a workspace.
const markerDir = ".switchboard/nodes"

// agentWorkspaces returns the distinct workspace directories of the
// configured agents (the default agent's when none is listed), sorted.
func AgentWorkspaces(set *settings.Settings) []string {
	ids := set.AgentIDs()
	if len(ids) == 0 {
		ids = []string{set.DefaultAgent}
	}
	var out []string
	for _, id := range ids {
		if ws := set.Agent(id).Workspace; !slices.Contains(out, ws) {
			out = append(out, ws)
		}
	}
	slices.Sort(out)
	return out
}

// markerPath is node id's marker in workspace ws.
func markerPath(ws, id string) string {
	return filepath.Join(ws, markerDir, url.PathEscape(id))
}

// writeNodeMarkers writes node id's marker (its id, one line) in every
// workspace, creating the workspaces as needed.
func WriteNodeMarkers(workspaces []string, id string) error {
	for _, ws := range workspaces {
		p := markerPath(ws, id)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("workspace marker: %w", err)
		}
		if err := os.WriteFile(p, []byte(id+"\n"), 0o600); err != nil {
			return fmt.Errorf("workspace marker: %w", err)
		}
	}
	return nil
}

// removeNodeMarkers removes node id's markers (a node leaving for good).
func RemoveNodeMarkers(workspaces []string, id string) error {
	var errs []error
	for _, ws := range workspaces {
		if err := os.Remove(markerPath(ws, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hasMarker reports whether workspace ws holds node id's marker.
func hasMarker(ws, id string) bool {
	b, err := os.ReadFile(markerPath(ws, id))
	return err == nil && strings.TrimSpace(string(b)) == id
}

// unsharedWorkspaces returns, for each workspace missing the marker of one
// of the nodes in ids, those nodes (sorted); empty when every workspace
// holds every node's marker.
func UnsharedWorkspaces(workspaces, ids []string) map[string][]string {
	out := map[string][]string{}
	for _, ws := range workspaces {
		for _, id := range ids {
			if !hasMarker(ws, id) {
				out[ws] = append(out[ws], id)
			}
		}
		slices.Sort(out[ws])
	}
	for ws, ids := range out {
		if len(ids) == 0 {
			delete(out, ws)
		}
	}
	return out
}

// describeUnshared says which workspaces miss which nodes' markers, one
// clause per workspace in path order.
func DescribeUnshared(missing map[string][]string) string {
	keys := make([]string, 0, len(missing))
	for ws := range missing {
		keys = append(keys, ws)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, ws := range keys {
		parts = append(parts, fmt.Sprintf("%s lacks the marker of node %s", ws, strings.Join(missing[ws], ", ")))
	}
	return strings.Join(parts, "; ")
}

// SharedWorkspacesFix is the fix serve and doctor name for workspaces
// that are not shared.
const SharedWorkspacesFix = "point agents.defaults.workspace (or each agent's workspace) at storage every node mounts at the same path (NFS, a shared volume): a session's turns move between nodes"

// workspacesCheck is doctor's "workspaces" line on a cluster: every agent
// workspace must hold the marker of every live node.
func workspacesCheck(workspaces, live []string) Check {
	if missing := UnsharedWorkspaces(workspaces, live); len(missing) > 0 {
		return Check{Name: "workspaces", Status: CheckFail,
			Detail: "not shared by the live nodes: " + DescribeUnshared(missing), Fix: SharedWorkspacesFix}
	}
	return Check{Name: "workspaces", Status: CheckOK,
		Detail: fmt.Sprintf("%s shared by the live nodes %s", strings.Join(workspaces, ", "), strings.Join(live, ", "))}
}
