package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestRunClaimsMadeWithItsRun: the claims the context carries for a run
// (store.RunClaims) are made in the transaction that stores that run, by
// OpenRun and by CreateRun, in order, and marked stored; a refused claim
// refuses the run: neither the run nor any claim is written, and the
// claim's error is returned.
func TestRunClaimsMadeWithItsRun(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	if !store.ClaimsWithRuns(s) {
		t.Fatal("the SQLite store does not make claims with runs")
	}
	const key = "agent:main:requester"
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a1", "a2", "a3", "a4", "a5"} {
		if err := s.PutOutbox(ctx, &store.OutboxItem{ID: id, Kind: "announce", SessionKey: "agent:main:old", Payload: []byte(`{}`), NextAttemptAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id, runID string) store.OutboxChange {
		return store.OutboxChange{ID: id, Apply: func(x *store.OutboxItem) error {
			if string(x.Payload) != `{}` {
				return errRefused
			}
			x.Payload, x.SessionKey = []byte(`{"batch":"`+runID+`"}`), key
			return nil
		}}
	}
	claimedFor := func(id string) string {
		t.Helper()
		it, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if it.SessionKey != key {
			return ""
		}
		return string(it.Payload)
	}
	runExists := func(id string) bool {
		_, err := s.GetRun(ctx, id)
		return err == nil
	}

	// OpenRun.
	c := &store.RunClaims{RunID: "r1", Claims: []store.OutboxChange{claim("a1", "r1"), claim("a2", "r1")}}
	if _, _, err := s.OpenRun(store.WithRunClaims(ctx, c), &store.Run{RunID: "r1", SessionKey: key, SessionID: "sid", AgentID: "main", Status: store.RunRunning, StartedAt: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	if !c.Stored() || claimedFor("a1") != `{"batch":"r1"}` || claimedFor("a2") != `{"batch":"r1"}` {
		t.Fatalf("OpenRun: stored %v, claims %q %q", c.Stored(), claimedFor("a1"), claimedFor("a2"))
	}

	// CreateRun (a queued run).
	c = &store.RunClaims{RunID: "r2", Claims: []store.OutboxChange{claim("a3", "r2")}}
	if err := s.CreateRun(store.WithRunClaims(ctx, c), &store.Run{RunID: "r2", SessionKey: key, AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if !c.Stored() || claimedFor("a3") != `{"batch":"r2"}` {
		t.Fatalf("CreateRun: stored %v, claim %q", c.Stored(), claimedFor("a3"))
	}

	// A refused claim (a1 is claimed already) refuses the run, and the
	// claim before it is not made either.
	c = &store.RunClaims{RunID: "r3", Claims: []store.OutboxChange{claim("a4", "r3"), claim("a1", "r3")}}
	if err := s.CreateRun(store.WithRunClaims(ctx, c), &store.Run{RunID: "r3", SessionKey: key, AgentID: "main"}); !errors.Is(err, errRefused) {
		t.Fatalf("CreateRun with a refused claim = %v, want its error", err)
	}
	if c.Stored() || runExists("r3") || claimedFor("a4") != "" {
		t.Fatalf("refused: stored %v, run stored %v, a4 claimed %q; want nothing written", c.Stored(), runExists("r3"), claimedFor("a4"))
	}
	c = &store.RunClaims{RunID: "r4", Claims: []store.OutboxChange{claim("a5", "r4"), claim("a2", "r4")}}
	if _, _, err := s.OpenRun(store.WithRunClaims(ctx, c), &store.Run{RunID: "r4", SessionKey: key, SessionID: "sid", AgentID: "main", Status: store.RunRunning, StartedAt: time.Now()}, nil); !errors.Is(err, errRefused) {
		t.Fatalf("OpenRun with a refused claim = %v, want its error", err)
	}
	if c.Stored() || runExists("r4") || claimedFor("a5") != "" {
		t.Fatalf("refused: stored %v, run stored %v, a5 claimed %q; want nothing written", c.Stored(), runExists("r4"), claimedFor("a5"))
	}

	// Claims for another run are not this run's.
	c = &store.RunClaims{RunID: "other", Claims: []store.OutboxChange{claim("a5", "other")}}
	if err := s.CreateRun(store.WithRunClaims(ctx, c), &store.Run{RunID: "r5", SessionKey: key, AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if c.Stored() || claimedFor("a5") != "" {
		t.Fatalf("another run's claims: stored %v, a5 claimed %q", c.Stored(), claimedFor("a5"))
	}
}

var errRefused = errors.New("claimed already")
