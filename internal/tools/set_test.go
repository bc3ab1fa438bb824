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

// Replacing a tool (a run's exec behind its own checks, made every run)
// does not copy the set's map, and a replacement of a replacement, of the
// same or another name, still reads as every With applied in turn.
func TestSetWithReplacesWithoutCopy(t *testing.T) {
	s := NewSet(stubTool{"read", "a"}, stubTool{"exec", "a"}, stubTool{"ls", "a"}, stubTool{"write", "a"})
	var r *Set
	if n := testing.AllocsPerRun(100, func() { r = s.With(stubTool{"exec", "b"}) }); n > 1 {
		t.Errorf("With(exec) made %v allocations, want 1 (the set, not a copy of its map)", n)
	}
	if got, _ := r.Get("exec"); got != (stubTool{"exec", "b"}) {
		t.Errorf("replaced exec = %v", got)
	}
	again := r.With(stubTool{"exec", "c"})
	if got := again.All(); !slices.Equal(got, []Tool{stubTool{"exec", "c"}, stubTool{"ls", "a"}, stubTool{"read", "a"}, stubTool{"write", "a"}}) {
		t.Errorf("exec replaced twice = %v", got)
	}
	two := r.With(stubTool{"read", "d"})
	want := []Tool{stubTool{"exec", "b"}, stubTool{"ls", "a"}, stubTool{"read", "d"}, stubTool{"write", "a"}}
	if got := two.All(); !slices.Equal(got, want) {
		t.Errorf("exec and read replaced = %v, want %v", got, want)
	}
	for _, tool := range want {
		if got, ok := two.Get(tool.Name()); !ok || got != tool {
			t.Errorf("Get(%s) = %v %v, want %v", tool.Name(), got, ok, tool)
		}
	}
	if got := r.All(); !slices.Equal(got, []Tool{stubTool{"exec", "b"}, stubTool{"ls", "a"}, stubTool{"read", "a"}, stubTool{"write", "a"}}) {
		t.Errorf("r after the later Withs = %v, want it unchanged", got)
	}
	if got := s.All(); !slices.Equal(got, []Tool{stubTool{"exec", "a"}, stubTool{"ls", "a"}, stubTool{"read", "a"}, stubTool{"write", "a"}}) {
		t.Errorf("s after the Withs = %v, want it unchanged", got)
	}
	if f := two.Filter(func(t Tool) bool { return t.Name() != "ls" }); !slices.Equal(f.All(), []Tool{stubTool{"exec", "b"}, stubTool{"read", "d"}, stubTool{"write", "a"}}) {
		t.Errorf("filtered = %v", f.All())
	}
}

// Each yields All's tools in All's order, replacement included, and
// allocates nothing.
func TestSetEach(t *testing.T) {
	s := NewSet(stubTool{"read", "a"}, stubTool{"exec", "a"}, stubTool{"ls", "a"}).With(stubTool{"exec", "b"})
	var got []Tool
	for tool := range s.Each() {
		got = append(got, tool)
	}
	if !slices.Equal(got, s.All()) {
		t.Errorf("Each = %v, All = %v", got, s.All())
	}
	for range s.Each() {
		break // stops where the loop does
	}
	var none *Set
	for tool := range none.Each() {
		t.Errorf("nil set yields %v", tool)
	}
	n := 0
	if allocs := testing.AllocsPerRun(50, func() {
		for range s.Each() {
			n++
		}
	}); allocs != 0 {
		t.Errorf("Each: %v allocations, want 0", allocs)
	}
}
