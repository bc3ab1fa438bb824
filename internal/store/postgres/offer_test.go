package postgres

import (
	"context"
	"testing"
	"time"
)

// TestOfferLane: a lane offered to a node is that node's unless a live
// node holds it; a claim under way is never moved, nor its epoch changed
// (an offer to its holder included), and a dead holder's lane is offered
// on; a node whose lease connection is gone (killed within its lease) is
// offered nothing.
func TestOfferLane(t *testing.T) {
	ctx := context.Background()
	stores := openNodes(t, 3)
	s := stores[0]
	register(t, s, "a", time.Minute)
	register(t, s, "b", time.Minute)
	register(t, s, "gone", time.Minute)
	// b's and a's lease connections are up; gone's never was.
	for i, id := range []string{"b", "a"} {
		if _, err := stores[i+1].RenewNode(ctx, id, time.Minute, NodeLoad{}); err != nil {
			t.Fatal(err)
		}
	}
	register(t, s, "dead", -time.Second) // its lease ended a second ago
	epochOf := func(key string) int64 {
		var e int64
		if err := s.pool.QueryRow(ctx, `SELECT epoch FROM lanes WHERE session_key = $1`, key).Scan(&e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	if owner, err := s.OfferLane(ctx, "b", "free"); err != nil || owner != "b" {
		t.Fatalf("offer of a free lane = %q, %v", owner, err)
	}
	if owner, err := s.LaneOwner(ctx, "free"); err != nil || owner != "b" {
		t.Errorf("owner after the offer = %q, %v", owner, err)
	}
	if owner, err := s.OfferLane(ctx, "gone", "other"); err != nil || owner != "" {
		t.Errorf("offer to a node without a lease connection = %q, %v, want not offered", owner, err)
	}
	if owner, err := s.LaneOwner(ctx, "other"); err != nil || owner != "" {
		t.Errorf("owner after a refused offer = %q, %v", owner, err)
	}
	_, e, err := s.ClaimLane(ctx, "a", "held")
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"b", "a"} {
		if owner, err := s.OfferLane(ctx, to, "held"); err != nil || owner != "a" {
			t.Errorf("offer to %s of a's lane = %q, %v", to, owner, err)
		}
		if got := epochOf("held"); got != e {
			t.Errorf("offer to %s changed the claim's epoch: %d, was %d", to, got, e)
		}
	}
	if _, _, err := s.ClaimLane(ctx, "dead", "orphan"); err != nil {
		t.Fatal(err)
	}
	if owner, err := s.OfferLane(ctx, "b", "orphan"); err != nil || owner != "b" {
		t.Errorf("offer of a dead node's lane = %q, %v", owner, err)
	}
}
