package tools

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// stubTool is a tool known by its name and a tag telling copies apart.
type stubTool struct{ name, tag string }

func (s stubTool) Name() string                                         { return s.name }
func (stubTool) Description() string                                    { return "" }
func (stubTool) Schema() json.RawMessage                                { return json.RawMessage(`{"type":"object"}`) }
func (stubTool) Call(context.Context, json.RawMessage) (*Result, error) { return JSONResult(nil), nil }

// With replaces the tool of the same name, or adds a new one in name
// order, and leaves the set it was called on as it was.
func TestSetWith(t *testing.T) {
	s := NewSet(stubTool{"read", "a"}, stubTool{"exec", "a"})
	r := s.With(stubTool{"exec", "b"})
	if got, _ := r.Get("exec"); got != (stubTool{"exec", "b"}) {
		t.Errorf("replaced exec = %v", got)
	}
	if got, _ := s.Get("exec"); got != (stubTool{"exec", "a"}) {
		t.Errorf("the original's exec = %v, want it unchanged", got)
	}
	if got := r.All(); !slices.Equal(got, []Tool{stubTool{"exec", "b"}, stubTool{"read", "a"}}) {
		t.Errorf("replaced set = %v", got)
	}
	added := r.With(stubTool{"ls", "c"})
	if got := added.All(); !slices.Equal(got, []Tool{stubTool{"exec", "b"}, stubTool{"ls", "c"}, stubTool{"read", "a"}}) {
		t.Errorf("set with ls = %v", got)
	}
	if r.Len() != 2 || s.Len() != 2 {
		t.Errorf("lens = %d, %d, want 2, 2", r.Len(), s.Len())
	}
	var none *Set
	if got := none.With(stubTool{"ls", "c"}).All(); !slices.Equal(got, []Tool{stubTool{"ls", "c"}}) {
		t.Errorf("nil set with ls = %v", got)
	}
}
