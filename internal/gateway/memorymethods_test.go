package gateway

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestMemoryMethodsRefuse: without a memory service the memory.* methods
// answer UNAVAILABLE saying why; bad params and unknown agents are refused
// before it is asked; memory.index needs the write scope.
func TestMemoryMethodsRefuse(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	for _, m := range []string{wire.MethodMemoryStatus, wire.MethodMemoryIndex} {
		if r := c.call(m, map[string]any{}); r.OK || r.Error.Code != wire.CodeUnavailable || r.Error.Message == "" {
			t.Errorf("%s without memory = %+v", m, r.Error)
		}
	}
	for _, params := range []map[string]any{
		{},
		{"query": ""},
		{"query": "x", "maxResults": 0},
		{"query": "x", "maxResults": 101},
		{"query": "x", "minScore": 2},
		{"query": "x", "agentId": ""},
		{"query": "x", "bogus": 1},
	} {
		if r := c.call(wire.MethodMemorySearch, params); r.OK || r.Error.Code != wire.CodeInvalidRequest {
			t.Errorf("memory.search %v = %+v, want INVALID_REQUEST", params, r.Error)
		}
	}
	if r := e.connect(wire.ScopeRead).call(wire.MethodMemoryIndex, nil); r.OK || r.Error.Code != wire.CodeForbidden {
		t.Errorf("memory.index with read scope = %+v", r.Error)
	}
}

// TestDoctorMemoryStatus: the reference Control UI's memory view gets its
// shape: no memory service → not registered, embeddings not ok; an unknown
// agent is refused.
func TestDoctorMemoryStatus(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	var res wire.DoctorMemoryStatusResult
	c.ok(wire.MethodDoctorMemoryStatus, map[string]any{}, &res)
	if res.AgentID != "main" || res.Provider != "none" || res.SearchRuntimeRegistered || res.Embedding.OK || res.Embedding.Error == "" {
		t.Errorf("doctor.memory.status without memory = %+v", res)
	}
	if r := c.call(wire.MethodDoctorMemoryStatus, map[string]any{"agentId": "ghost"}); r.OK {
		t.Errorf("doctor.memory.status for an unknown agent answered ok")
	}
}
