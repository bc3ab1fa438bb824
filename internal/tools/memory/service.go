package memory

import (
	"context"
	"strings"

	"github.com/switchboardhq/switchboard/internal/memory"
)

// Service answers the gateway's memory.* methods for an agent's own
// workspace, on the index the memory tools search.
type Service struct {
	Index *memory.Index
	// Workspace returns an agent's workspace directory.
	Workspace func(agentID string) string
}

// StatusReport is memory.status's result.
type StatusReport struct {
	AgentID      string `json:"agentId"`
	WorkspaceDir string `json:"workspaceDir"`
	memory.Status
}

// Status reports agentID's index, changing nothing.
func (s Service) Status(ctx context.Context, agentID string) (any, error) {
	ws := s.Workspace(agentID)
	st, err := s.Index.Status(ctx, indexScope(agentID, ws), ws)
	if err != nil {
		return nil, err
	}
	return StatusReport{AgentID: agentID, WorkspaceDir: ws, Status: st}, nil
}

// IndexReport is memory.index's result.
type IndexReport struct {
	AgentID      string `json:"agentId"`
	WorkspaceDir string `json:"workspaceDir"`
	memory.IndexStats
}

// Reindex brings agentID's index up to date now, vectors included.
func (s Service) Reindex(ctx context.Context, agentID string) (any, error) {
	ws := s.Workspace(agentID)
	st, err := s.Index.Index(ctx, indexScope(agentID, ws), ws)
	if err != nil {
		return nil, err
	}
	return IndexReport{AgentID: agentID, WorkspaceDir: ws, IndexStats: st}, nil
}

// SearchReport is memory.search's result: memory_search's hits and mode.
type SearchReport struct {
	AgentID  string       `json:"agentId"`
	Results  []memory.Hit `json:"results"`
	Mode     string       `json:"mode"`
	Provider string       `json:"provider"`
	Model    string       `json:"model,omitempty"`
	Warnings []string     `json:"warnings,omitempty"`
}

// Search searches agentID's memory as memory_search does.
func (s Service) Search(ctx context.Context, agentID, query string, maxResults int, minScore float64) (any, error) {
	ws := s.Workspace(agentID)
	found, err := s.Index.Query(ctx, indexScope(agentID, ws), ws, query, maxResults, minScore)
	if err != nil {
		return nil, err
	}
	rep := SearchReport{AgentID: agentID, Results: found.Hits, Mode: found.Mode, Provider: "none"}
	if rep.Results == nil {
		rep.Results = []memory.Hit{}
	}
	if found.Mode == "hybrid" {
		rep.Provider, rep.Model, _ = strings.Cut(found.Model, "/")
	}
	if found.Warning != "" {
		rep.Warnings = []string{found.Warning}
	}
	return rep, nil
}
