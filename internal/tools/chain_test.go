package tools

import (
	"strings"
	"testing"
)

func TestChainCheckNext(t *testing.T) {
	lim := ChainLimits{MaxHops: 3, MaxVisits: 2}
	start := Chain{ID: "r1", Path: []string{"a"}}
	tests := []struct {
		name   string
		chain  Chain
		target string
		want   string // substring of the refusal; "" means allowed
	}{
		{"first hop", start, "b", ""},
		{"at the limit", Chain{ID: "r1", Hops: 2, Path: []string{"a", "b", "c"}}, "d", ""},
		{"past the limit", Chain{ID: "r1", Hops: 3, Path: []string{"a", "b", "c", "d"}}, "e", "hop 4 of agent chain r1, over the limit of 3"},
		{"second visit", Chain{ID: "r1", Hops: 2, Path: []string{"a", "b", "c"}}, "a", ""},
		{"third visit", Chain{ID: "r1", Hops: 2, Path: []string{"a", "b", "a"}}, "a", "already reached a 2 times"},
		{"no limits", Chain{ID: "r1", Hops: 99, Path: []string{"a", "a", "a"}}, "a", ""},
	}
	for _, tt := range tests {
		l := lim
		if tt.name == "no limits" {
			l = ChainLimits{}
		}
		got := tt.chain.CheckNext(tt.target, l)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: CheckNext = %q, want %q", tt.name, got, tt.want)
		}
	}
	// A ring a→b→c→a… stops: the visits limit is reached before any
	// hop limit, whatever the ring's size.
	c, steps := start, 0
	for _, next := range []string{"b", "c", "a", "b", "c", "a", "b", "c", "a"} {
		if c.CheckNext(next, ChainLimits{MaxHops: 100, MaxVisits: 2}) != "" {
			break
		}
		c, steps = c.Next(next), steps+1
	}
	if steps != 5 {
		t.Errorf("a three-agent ring took %d hops before stopping, want 5", steps)
	}
	if n := start.Next("b"); n.Hops != 1 || len(n.Path) != 2 || len(start.Path) != 1 {
		t.Errorf("Next = %+v (start %+v)", n, start)
	}
}

// TestChainCarriesItsOrigin: every hop keeps the chain's outside origin,
// and tainting keeps the first one met (an origin is never washed out).
func TestChainCarriesItsOrigin(t *testing.T) {
	c := Chain{ID: "c", Path: []string{"a"}}.Taint("webhook")
	for _, target := range []string{"b", "c", "d"} {
		c = c.Next(target)
		if c.Untrusted != "webhook" {
			t.Fatalf("after hop to %s: untrusted = %q", target, c.Untrusted)
		}
	}
	if got := c.Taint("a2a").Untrusted; got != "webhook" {
		t.Errorf("Taint over an origin = %q, want the first (webhook)", got)
	}
	if got := c.Taint("").Untrusted; got != "webhook" {
		t.Errorf(`Taint("") = %q, want webhook kept`, got)
	}
	if got := (Chain{ID: "op"}).Taint("").Untrusted; got != "" {
		t.Errorf("the operator's chain became %q", got)
	}
}
