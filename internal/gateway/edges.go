package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// defaultEdges is how many edges sessions.edges returns when no limit is
// given.
const defaultEdges = 200

// handleSessionsEdges lists the newest inter-session messages that
// reached the given sessions: the runs of those sessions whose input came
// from another session, read from the runs' durable input.
func (s *Server) handleSessionsEdges(ctx context.Context, cl *call) (any, error) {
	var p struct {
		Keys  []string `json:"keys"`
		Limit int      `json:"limit"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if len(p.Keys) > wire.MaxEdgeKeys {
		return nil, invalid(fmt.Sprintf("invalid sessions.edges params: at most %d keys", wire.MaxEdgeKeys))
	}
	if p.Limit == 0 {
		p.Limit = defaultEdges
	}
	keys := make([]string, 0, len(p.Keys))
	for _, k := range p.Keys {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	out := wire.SessionsEdgesResult{Edges: []wire.SessionEdge{}}
	if len(keys) == 0 {
		return out, nil
	}
	// Runs that are not inter-session (a person's turns) are skipped, so
	// read more than the limit, newest first.
	runs, err := s.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKeys: keys, Newest: true, Limit: 4 * p.Limit})
	if err != nil {
		return nil, fmt.Errorf("sessions.edges: %w", err)
	}
	for _, r := range runs {
		if len(out.Edges) == p.Limit {
			break
		}
		for _, e := range edgesOf(r) {
			if len(out.Edges) == p.Limit {
				break
			}
			out.Edges = append(out.Edges, e)
		}
	}
	return out, nil
}

// edgesOf is run as edges when its input came from another session: one,
// or one per source when the input carries several (a batch of announces).
func edgesOf(r *store.Run) []wire.SessionEdge {
	var in struct {
		Provenance *struct {
			Kind              string   `json:"kind"`
			SourceSessionKey  string   `json:"sourceSessionKey"`
			SourceSessionKeys []string `json:"sourceSessionKeys"`
			SourceTool        string   `json:"sourceTool"`
		} `json:"provenance"`
	}
	if len(r.Input) == 0 || json.Unmarshal(r.Input, &in) != nil || in.Provenance == nil ||
		in.Provenance.Kind != transcript.ProvenanceInterSession || in.Provenance.SourceSessionKey == "" {
		return nil
	}
	e := wire.SessionEdge{RunID: r.RunID, From: in.Provenance.SourceSessionKey, To: r.SessionKey, Via: in.Provenance.SourceTool,
		CreatedAt: r.CreatedAt.UnixMilli()}
	switch r.Status {
	case store.RunQueued:
		e.Status = wire.EdgeQueued
	case store.RunRunning:
		e.Status = wire.EdgeDelivered
	case store.RunOK:
		e.Status = wire.EdgeReplied
	default:
		e.Status, e.Error = wire.EdgeFailed, r.Error
	}
	if !r.EndedAt.IsZero() {
		e.EndedAt = r.EndedAt.UnixMilli()
	}
	if len(in.Provenance.SourceSessionKeys) < 2 {
		return []wire.SessionEdge{e}
	}
	out := make([]wire.SessionEdge, 0, len(in.Provenance.SourceSessionKeys))
	for _, from := range in.Provenance.SourceSessionKeys {
		e.From = from
		out = append(out, e)
	}
	return out
}
