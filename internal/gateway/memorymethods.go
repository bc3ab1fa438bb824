package gateway

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// MemoryService answers the memory.* methods (Switchboard's own: the
// reference's `memory` CLI reads its index in-process) for an agent's
// workspace: its index's state, a re-index now, and a search as
// memory_search does it.
type MemoryService interface {
	Status(ctx context.Context, agentID string) (any, error)
	Reindex(ctx context.Context, agentID string) (any, error)
	Search(ctx context.Context, agentID, query string, maxResults int, minScore float64) (any, error)
}

// memoryMethods are memory.status, memory.index and memory.search.
func (s *Server) memoryMethods() []*method {
	return []*method{
		{name: wire.MethodMemoryStatus, scope: wire.ScopeRead, handle: s.handleMemoryStatus},
		{name: wire.MethodMemoryIndex, scope: wire.ScopeWrite, handle: s.handleMemoryIndex},
		{name: wire.MethodMemorySearch, scope: wire.ScopeRead, handle: s.handleMemorySearch},
		{name: wire.MethodDoctorMemoryStatus, scope: wire.ScopeRead, handle: s.handleDoctorMemoryStatus},
	}
}

// memoryStatusView is the part of the memory index's status that
// doctor.memory.status reports.
type memoryStatusView struct {
	Mode, Model, Reason string
}

// handleDoctorMemoryStatus answers the reference Control UI's memory view
// in its shape: the embedding provider ("none" when search is keyword
// only), whether embeddings are available (not probed: the status costs no
// provider call), and that a search runtime is registered. Switchboard
// has no dreaming, so that section is absent.
func (s *Server) handleDoctorMemoryStatus(ctx context.Context, cl *call) (any, error) {
	var p struct {
		AgentID string
		Probe   bool
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	id := s.agentID(p.AgentID)
	if !s.knownAgent(id) {
		return nil, unknownAgent(id)
	}
	res := wire.DoctorMemoryStatusResult{AgentID: id, Provider: "none"}
	if s.cfg.Memory == nil {
		res.Embedding = wire.MemoryEmbedding{OK: false, Error: "memory search is disabled (memory.search.enabled is false)"}
		return res, nil
	}
	res.SearchRuntimeRegistered = true
	raw, err := s.cfg.Memory.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	var st memoryStatusView
	if b, err := json.Marshal(raw); err == nil {
		_ = json.Unmarshal(b, &st)
	}
	if st.Mode == "hybrid" {
		res.Provider, _, _ = strings.Cut(st.Model, "/")
		res.Embedding = wire.MemoryEmbedding{OK: true}
	} else {
		notChecked := false
		res.Embedding = wire.MemoryEmbedding{OK: false, Checked: &notChecked, Error: st.Reason}
	}
	return res, nil
}

// memoryAgent decodes the agent of a memory.* call into p (which embeds
// AgentID) and checks memory is served and the agent exists.
func (s *Server) memoryAgent(cl *call, p any, agentID *string) error {
	if err := cl.decode(p); err != nil {
		return err
	}
	if s.cfg.Memory == nil {
		return wire.NewError(wire.CodeUnavailable, "memory search is disabled (memory.search.enabled is false) or the store keeps no memory index")
	}
	*agentID = s.agentID(*agentID)
	if !s.knownAgent(*agentID) {
		return unknownAgent(*agentID)
	}
	return nil
}

func (s *Server) handleMemoryStatus(ctx context.Context, cl *call) (any, error) {
	var p struct{ AgentID string }
	if err := s.memoryAgent(cl, &p, &p.AgentID); err != nil {
		return nil, err
	}
	return s.cfg.Memory.Status(ctx, p.AgentID)
}

func (s *Server) handleMemoryIndex(ctx context.Context, cl *call) (any, error) {
	var p struct{ AgentID string }
	if err := s.memoryAgent(cl, &p, &p.AgentID); err != nil {
		return nil, err
	}
	return s.cfg.Memory.Reindex(ctx, p.AgentID)
}

func (s *Server) handleMemorySearch(ctx context.Context, cl *call) (any, error) {
	var p struct {
		AgentID    string
		Query      string
		MaxResults int
		MinScore   float64
	}
	if err := s.memoryAgent(cl, &p, &p.AgentID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Query) == "" {
		return nil, invalid("query required")
	}
	return s.cfg.Memory.Search(ctx, p.AgentID, p.Query, p.MaxResults, p.MinScore)
}
