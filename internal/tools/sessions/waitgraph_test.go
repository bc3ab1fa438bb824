package sessions

import (
	"slices"
	"testing"
)

func TestWaitGraph(t *testing.T) {
	type step struct {
		from, to string
		cycle    []string // nil: the wait is allowed
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"self", []step{{"a", "a", []string{"a", "a"}}}},
		{"chain is fine", []step{{"a", "b", nil}, {"b", "c", nil}, {"c", "d", nil}}},
		{"two-cycle", []step{{"a", "b", nil}, {"b", "a", []string{"b", "a", "b"}}}},
		{"three-cycle", []step{{"a", "b", nil}, {"b", "c", nil}, {"c", "a", []string{"c", "a", "b", "c"}}}},
		{"fan-in is fine", []step{{"a", "c", nil}, {"b", "c", nil}, {"a", "b", nil}}},
		{"diamond closes", []step{{"a", "b", nil}, {"a", "c", nil}, {"b", "d", nil}, {"c", "d", nil}, {"d", "a", nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g waitGraph
			for i, s := range tc.steps {
				want := s.cycle
				if tc.name == "diamond closes" && i == 4 {
					_, cycle := g.acquire(s.from, s.to)
					if len(cycle) != 4 || cycle[0] != "d" || cycle[1] != "a" || cycle[3] != "d" {
						t.Fatalf("diamond: cycle %v", cycle)
					}
					continue
				}
				_, cycle := g.acquire(s.from, s.to)
				if !slices.Equal(cycle, want) {
					t.Fatalf("step %d %s→%s: cycle %v, want %v", i, s.from, s.to, cycle, want)
				}
			}
		})
	}
}

// A released wait no longer blocks: the edge is gone once every wait on it
// has ended, and releasing twice does not take away another's edge.
func TestWaitGraphRelease(t *testing.T) {
	var g waitGraph
	r1, _ := g.acquire("a", "b")
	r2, _ := g.acquire("a", "b")
	r1()
	r1()
	if _, cycle := g.acquire("b", "a"); cycle == nil {
		t.Fatal("a still waits on b (second wait): b → a must be refused")
	}
	r2()
	rel, cycle := g.acquire("b", "a")
	if cycle != nil {
		t.Fatalf("after both releases: cycle %v", cycle)
	}
	rel()
	if len(g.edges) != 0 {
		t.Fatalf("edges left: %v", g.edges)
	}
}
