package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// scribble mutates every reference-typed field of sess in place.
func scribble(sess *store.Session) {
	sess.Label = "scribbled"
	if sess.DeliveryContext != nil {
		sess.DeliveryContext.To = "scribbled"
	}
	for i := range sess.Extra {
		sess.Extra[i] = ' '
	}
}

// scribbleRun mutates every reference-typed field of r in place.
func scribbleRun(r *store.Run) {
	r.Status = store.RunError
	for i := range r.Input {
		r.Input[i] = ' '
	}
	if r.Usage.Cost != nil {
		r.Usage.Cost.Total = -1
	}
}

// testCloneIndependence checks that no value passed in or handed out shares
// memory with what the store keeps.
func testCloneIndependence(t *testing.T, s store.Store) {
	ctx := context.Background()
	const key = "agent:main:main"
	want := fullSession(key)
	in := fullSession(key)
	mustCreate(t, s, in)
	scribble(in)
	check := func(what string) {
		t.Helper()
		if diff := cmp.Diff(want, mustGet(t, s, key), cmpOpts); diff != "" {
			t.Errorf("after mutating %s (-want +got):\n%s", what, diff)
		}
	}
	check("the created session")

	scribble(mustGet(t, s, key))
	check("a GetSession result")

	list, err := s.ListSessions(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scribble(list[0])
	check("a ListSessions result")

	byID, err := s.SessionsByID(ctx, want.SessionID)
	if err != nil || len(byID) != 1 {
		t.Fatalf("SessionsByID: %v, %d rows", err, len(byID))
	}
	scribble(byID[0])
	check("a SessionsByID result")

	var kept *store.Session
	got, err := s.UpdateSession(ctx, key, false, func(sess *store.Session) error {
		kept = sess
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scribble(got)
	check("an UpdateSession result")
	scribble(kept)
	check("the session fn saw")

	// Runs.
	wantRun := fullRun("run-1", key, store.RunRunning, at(1))
	inRun := fullRun("run-1", key, store.RunRunning, at(1))
	wantRun.Usage.Cost = &transcript.Cost{Total: 1}
	inRun.Usage.Cost = &transcript.Cost{Total: 1}
	mustCreateRun(t, s, inRun)
	scribbleRun(inRun)
	checkRun := func(what string) {
		t.Helper()
		if diff := cmp.Diff(wantRun, mustGetRun(t, s, "run-1"), cmpOpts); diff != "" {
			t.Errorf("after mutating %s (-want +got):\n%s", what, diff)
		}
	}
	checkRun("the created run")
	scribbleRun(mustGetRun(t, s, "run-1"))
	checkRun("a GetRun result")
	runs, err := s.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("ListRuns: %v, %d rows", err, len(runs))
	}
	scribbleRun(runs[0])
	checkRun("a ListRuns result")
	var keptRun *store.Run
	gotRun, err := s.UpdateRun(ctx, "run-1", func(r *store.Run) error {
		keptRun = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scribbleRun(gotRun)
	checkRun("an UpdateRun result")
	scribbleRun(keptRun)
	checkRun("the run fn saw")

	// Messages.
	const sid = "clone"
	in2 := richEntries()
	appended := mustAppend(t, s, sid, in2...)
	wantHist := mustHistory(t, s, sid, store.HistoryOptions{})
	for _, list := range [][]store.Message{appended, mustHistory(t, s, sid, store.HistoryOptions{})} {
		for i := range list {
			e := &list[i].Entry
			if e.ParentID != nil {
				*e.ParentID = "scribbled"
			}
			e.ID = "scribbled"
			if e.Message != nil {
				e.Message.Role = "scribbled"
				for j := range e.Message.Details {
					e.Message.Details[j] = ' '
				}
			}
		}
	}
	sameMessages(t, "History after mutating results", wantHist, mustHistory(t, s, sid, store.HistoryOptions{}))
}
