package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
)

func testCreateGetSession(t *testing.T, s store.Store) {
	ctx := context.Background()
	want := fullSession("agent:main:main")
	mustCreate(t, s, want)
	if diff := cmp.Diff(want, mustGet(t, s, want.Key), cmpOpts); diff != "" {
		t.Errorf("GetSession after CreateSession (-want +got):\n%s", diff)
	}

	dup := fullSession(want.Key)
	dup.Label = "other"
	wantErr(t, "CreateSession of an existing key", s.CreateSession(ctx, dup), store.ErrConflict)
	if got := mustGet(t, s, want.Key); got.Label != want.Label {
		t.Errorf("conflicting CreateSession changed the row: label = %q", got.Label)
	}

	_, err := s.GetSession(ctx, "agent:main:missing")
	wantErr(t, "GetSession of a missing key", err, store.ErrNotFound)

	// A minimal row keeps its zero fields zero.
	minimal := &store.Session{Key: "global", SessionID: "s-min", CreatedAt: at(1), UpdatedAt: at(2)}
	mustCreate(t, s, minimal)
	if diff := cmp.Diff(minimal, mustGet(t, s, "global")); diff != "" {
		t.Errorf("minimal session round trip (-want +got):\n%s", diff)
	}
	// A set but empty delivery context stays set.
	emptyDC := &store.Session{Key: "agent:main:dc", SessionID: "s-dc", DeliveryContext: &store.DeliveryContext{},
		CreatedAt: at(1), UpdatedAt: at(2)}
	mustCreate(t, s, emptyDC)
	if got := mustGet(t, s, emptyDC.Key); got.DeliveryContext == nil {
		t.Errorf("empty DeliveryContext came back nil")
	}
}

func testCreateSessionDefaults(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Second)
	mustCreate(t, s, &store.Session{Key: "agent:main:main", SessionID: "s1"})
	after := time.Now().Add(time.Second)
	got := mustGet(t, s, "agent:main:main")
	for name, v := range map[string]time.Time{"CreatedAt": got.CreatedAt, "UpdatedAt": got.UpdatedAt} {
		if v.Before(before) || v.After(after) {
			t.Errorf("%s = %v, want now (between %v and %v)", name, v, before, after)
		}
	}
}

func testUpdateSession(t *testing.T, s store.Store) {
	ctx := context.Background()
	const key = "agent:main:telegram:group:1"

	// Not found without create; nothing is inserted and fn is not called.
	called := false
	_, err := s.UpdateSession(ctx, key, false, func(*store.Session) error { called = true; return nil })
	wantErr(t, "UpdateSession without create", err, store.ErrNotFound)
	if called {
		t.Errorf("fn called for a missing session without create")
	}
	if _, err := s.GetSession(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateSession without create inserted a row: %v", err)
	}

	// Create: fn sees a zero Session with only Key set.
	created, err := s.UpdateSession(ctx, key, true, func(sess *store.Session) error {
		if diff := cmp.Diff(&store.Session{Key: key}, sess); diff != "" {
			t.Errorf("fn's session on create (-want +got):\n%s", diff)
		}
		sess.SessionID = "s-1"
		sess.AgentID = "main"
		sess.Kind = "group"
		sess.Label = "first"
		sess.CreatedAt = at(1)
		sess.UpdatedAt = at(1)
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateSession create: %v", err)
	}
	stored := mustGet(t, s, key)
	if diff := cmp.Diff(stored, created, cmpOpts); diff != "" {
		t.Errorf("UpdateSession result differs from the stored row (-stored +returned):\n%s", diff)
	}
	if created.SessionID != "s-1" || created.Label != "first" || !created.CreatedAt.Equal(at(1)) {
		t.Errorf("created session = %+v", created)
	}

	// Update: fn sees the stored row and every field it sets is stored.
	want := fullSession(key)
	updated, err := s.UpdateSession(ctx, key, true, func(sess *store.Session) error {
		if diff := cmp.Diff(stored, sess, cmpOpts); diff != "" {
			t.Errorf("fn's session on update (-want +got):\n%s", diff)
		}
		*sess = *fullSession(key)
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateSession update: %v", err)
	}
	if diff := cmp.Diff(want, updated, cmpOpts); diff != "" {
		t.Errorf("UpdateSession result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustGet(t, s, key), cmpOpts); diff != "" {
		t.Errorf("stored row after UpdateSession (-want +got):\n%s", diff)
	}

	// Clearing fields clears them. The result is the row as stored, even
	// for a time finer than the backend keeps.
	cleared, err := s.UpdateSession(ctx, key, false, func(sess *store.Session) error {
		sess.UpdatedAt = at(20).Add(1500*time.Microsecond + 7)
		sess.DeliveryContext = nil
		sess.Extra = nil
		sess.Label = ""
		sess.SystemSent = false
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateSession clear: %v", err)
	}
	got := mustGet(t, s, key)
	if got.DeliveryContext != nil || got.Extra != nil || got.Label != "" || got.SystemSent {
		t.Errorf("cleared fields came back: %+v", got)
	}
	if diff := cmp.Diff(got, cleared, cmpOpts); diff != "" {
		t.Errorf("UpdateSession result differs from the stored row (-stored +returned):\n%s", diff)
	}
}

func testUpdateSessionFnError(t *testing.T, s store.Store) {
	ctx := context.Background()
	boom := errors.New("boom")
	want := fullSession("agent:main:main")
	mustCreate(t, s, want)

	_, err := s.UpdateSession(ctx, want.Key, false, func(sess *store.Session) error {
		sess.Label = "changed"
		sess.InputTokens = 999
		sess.DeliveryContext.To = "changed"
		return boom
	})
	wantErr(t, "UpdateSession with failing fn", err, boom)
	if diff := cmp.Diff(want, mustGet(t, s, want.Key), cmpOpts); diff != "" {
		t.Errorf("failing fn changed the row (-want +got):\n%s", diff)
	}

	// With create, a failing fn inserts nothing.
	_, err = s.UpdateSession(ctx, "agent:main:new", true, func(sess *store.Session) error {
		sess.SessionID = "s-new"
		return boom
	})
	wantErr(t, "UpdateSession create with failing fn", err, boom)
	if _, err := s.GetSession(ctx, "agent:main:new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failing fn with create inserted a row: %v", err)
	}
}

func testDeleteSession(t *testing.T, s store.Store) {
	ctx := context.Background()
	wantErr(t, "DeleteSession of a missing key", s.DeleteSession(ctx, "agent:main:nope", false), store.ErrNotFound)
	wantErr(t, "DeleteSession of a missing key", s.DeleteSession(ctx, "agent:main:nope", true), store.ErrNotFound)

	keep := &store.Session{Key: "agent:main:keep", SessionID: "s-keep"}
	drop := &store.Session{Key: "agent:main:drop", SessionID: "s-drop"}
	other := &store.Session{Key: "agent:main:other", SessionID: "s-other"}
	for _, sess := range []*store.Session{keep, drop, other} {
		mustCreate(t, s, sess)
		mustAppend(t, s, sess.SessionID, textMsg("user", "a"), textMsg("assistant", "b"))
	}

	count := func(sid string) int64 {
		t.Helper()
		n, err := s.CountMessages(ctx, sid)
		if err != nil {
			t.Fatalf("CountMessages(%q): %v", sid, err)
		}
		return n
	}

	if err := s.DeleteSession(ctx, keep.Key, false); err != nil {
		t.Fatalf("DeleteSession without transcript: %v", err)
	}
	if _, err := s.GetSession(ctx, keep.Key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSession after delete: %v, want ErrNotFound", err)
	}
	if n := count(keep.SessionID); n != 2 {
		t.Errorf("transcript kept by DeleteSession(false) has %d entries, want 2", n)
	}

	if err := s.DeleteSession(ctx, drop.Key, true); err != nil {
		t.Fatalf("DeleteSession with transcript: %v", err)
	}
	if _, err := s.GetSession(ctx, drop.Key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSession after delete: %v, want ErrNotFound", err)
	}
	if n := count(drop.SessionID); n != 0 {
		t.Errorf("transcript deleted by DeleteSession(true) has %d entries, want 0", n)
	}
	if h := mustHistory(t, s, drop.SessionID, store.HistoryOptions{}); len(h) != 0 {
		t.Errorf("History of a deleted transcript has %d entries", len(h))
	}
	if n := count(other.SessionID); n != 2 {
		t.Errorf("unrelated transcript has %d entries, want 2", n)
	}
	mustGet(t, s, other.Key)
	wantErr(t, "second DeleteSession", s.DeleteSession(ctx, drop.Key, true), store.ErrNotFound)

	// The transcript id is free again.
	got := mustAppend(t, s, drop.SessionID, textMsg("user", "again"))
	if got[0].Seq != 1 || got[0].Entry.ParentID != nil {
		t.Errorf("append after delete: seq %d parent %v, want 1 and nil", got[0].Seq, got[0].Entry.ParentID)
	}
}

func testListSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	type row struct {
		key, agent, spawnedBy, label, kind, display string
		updated                                     int
	}
	rows := []row{
		{"agent:main:main", "main", "", "", "direct", "Main chat", 50},
		{"agent:main:telegram:group:1", "main", "", "team", "group", "Ops Team", 40},
		{"agent:main:subagent:a", "main", "agent:main:main", "worker", "direct", "", 30},
		{"agent:main:subagent:b", "main", "agent:main:main", "worker", "direct", "", 30}, // ties with a
		{"agent:main:subagent:c", "main", "agent:main:subagent:a", "", "direct", "", 20},
		{"agent:ops:main", "ops", "", "", "direct", "Über Ops", 45},
		{"agent:ops:discord:group:9", "ops", "", "team", "group", "", 10},
		{"global", "", "", "", "global", "", 5},
	}
	for _, r := range rows {
		mustCreate(t, s, &store.Session{
			Key: r.key, SessionID: "sid-" + pad12(r.key), AgentID: r.agent, SpawnedBy: r.spawnedBy,
			Label: r.label, Kind: r.kind, DisplayName: r.display,
			CreatedAt: at(0), UpdatedAt: at(r.updated),
		})
	}
	all := []string{
		"agent:main:main", "agent:ops:main", "agent:main:telegram:group:1",
		"agent:main:subagent:a", "agent:main:subagent:b", "agent:main:subagent:c",
		"agent:ops:discord:group:9", "global",
	}
	tests := []struct {
		name string
		opts store.ListOptions
		want []string
	}{
		{"all", store.ListOptions{}, all},
		{"limit", store.ListOptions{Limit: 3}, all[:3]},
		{"limit offset", store.ListOptions{Limit: 3, Offset: 3}, all[3:6]},
		{"offset only", store.ListOptions{Offset: 6}, all[6:]},
		{"offset past end", store.ListOptions{Limit: 5, Offset: 100}, nil},
		{"agent", store.ListOptions{AgentID: "ops"}, []string{"agent:ops:main", "agent:ops:discord:group:9"}},
		{"spawnedBy", store.ListOptions{SpawnedBy: "agent:main:main"}, []string{"agent:main:subagent:a", "agent:main:subagent:b"}},
		{"label", store.ListOptions{Label: "team"}, []string{"agent:main:telegram:group:1", "agent:ops:discord:group:9"}},
		{"kind", store.ListOptions{Kind: "group"}, []string{"agent:main:telegram:group:1", "agent:ops:discord:group:9"}},
		{"updatedSince inclusive", store.ListOptions{UpdatedSince: at(40)}, []string{"agent:main:main", "agent:ops:main", "agent:main:telegram:group:1"}},
		{"combined", store.ListOptions{AgentID: "main", Label: "worker", Limit: 1, Offset: 1}, []string{"agent:main:subagent:b"}},
		{"search key", store.ListOptions{Search: "SUBAGENT:"}, []string{"agent:main:subagent:a", "agent:main:subagent:b", "agent:main:subagent:c"}},
		{"search label", store.ListOptions{Search: "Work"}, []string{"agent:main:subagent:a", "agent:main:subagent:b"}},
		{"search displayName", store.ListOptions{Search: "ops team"}, []string{"agent:main:telegram:group:1"}},
		{"search non-ascii", store.ListOptions{Search: "über"}, []string{"agent:ops:main"}},
		{"search sessionId", store.ListOptions{Search: "sid-" + pad12("global")}, []string{"global"}},
		{"search with limit", store.ListOptions{Search: "agent:main", Limit: 2, Offset: 1}, []string{"agent:main:telegram:group:1", "agent:main:subagent:a"}},
		{"no match", store.ListOptions{AgentID: "nobody"}, nil},
		{"exclude subagents", store.ListOptions{Exclude: store.ClassSubagent}, []string{
			"agent:main:main", "agent:ops:main", "agent:main:telegram:group:1", "agent:ops:discord:group:9", "global"}},
		{"exclude global and subagents, paged", store.ListOptions{Exclude: store.ClassGlobal | store.ClassSubagent, Limit: 2, Offset: 3},
			[]string{"agent:ops:discord:group:9"}},
		{"exclude with agent", store.ListOptions{AgentID: "main", Exclude: store.ClassSubagent}, []string{"agent:main:main", "agent:main:telegram:group:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListSessions(ctx, tt.opts)
			if err != nil {
				t.Fatalf("ListSessions(%+v): %v", tt.opts, err)
			}
			var keys []string
			for _, sess := range got {
				keys = append(keys, sess.Key)
			}
			if diff := cmp.Diff(tt.want, keys, cmpOpts); diff != "" {
				t.Errorf("ListSessions(%+v) keys (-want +got):\n%s", tt.opts, diff)
			}
			// CountSessions counts what the filters match, whatever
			// the page.
			unpaged := tt.opts
			unpaged.Limit, unpaged.Offset = 0, 0
			whole, err := s.ListSessions(ctx, unpaged)
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.CountSessions(ctx, tt.opts)
			if err != nil {
				t.Fatalf("CountSessions(%+v): %v", tt.opts, err)
			}
			if n != int64(len(whole)) {
				t.Errorf("CountSessions(%+v) = %d, want %d", tt.opts, n, len(whole))
			}
		})
	}

	// Rows come back whole.
	full := fullSession("agent:zzz:main")
	full.UpdatedAt = at(1000)
	mustCreate(t, s, full)
	got, err := s.ListSessions(ctx, store.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("ListSessions(limit 1) = %d rows", len(got))
	}
	if diff := cmp.Diff(full, got[0], cmpOpts); diff != "" {
		t.Errorf("listed row (-want +got):\n%s", diff)
	}
}

func testSessionsByID(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, &store.Session{Key: "agent:main:b", SessionID: "shared", CreatedAt: at(0), UpdatedAt: at(1)})
	mustCreate(t, s, &store.Session{Key: "agent:main:a", SessionID: "shared", CreatedAt: at(0), UpdatedAt: at(2)})
	mustCreate(t, s, &store.Session{Key: "agent:main:c", SessionID: "solo", CreatedAt: at(0), UpdatedAt: at(3)})

	keys := func(id string) []string {
		t.Helper()
		got, err := s.SessionsByID(ctx, id)
		if err != nil {
			t.Fatalf("SessionsByID(%q): %v", id, err)
		}
		var out []string
		for _, sess := range got {
			if sess.SessionID != id {
				t.Errorf("SessionsByID(%q) returned session %q with id %q", id, sess.Key, sess.SessionID)
			}
			out = append(out, sess.Key)
		}
		return out
	}
	if diff := cmp.Diff([]string{"agent:main:c"}, keys("solo")); diff != "" {
		t.Errorf("SessionsByID(solo) (-want +got):\n%s", diff)
	}
	got := keys("shared")
	if len(got) != 2 || !(got[0] == "agent:main:a" && got[1] == "agent:main:b" || got[0] == "agent:main:b" && got[1] == "agent:main:a") {
		t.Errorf("SessionsByID(shared) = %v, want agent:main:a and agent:main:b", got)
	}
	if got := keys("missing"); len(got) != 0 {
		t.Errorf("SessionsByID(missing) = %v, want none", got)
	}

	// It follows SessionID rotation.
	if _, err := s.UpdateSession(ctx, "agent:main:c", false, func(sess *store.Session) error {
		sess.SessionID = "rotated"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := keys("solo"); len(got) != 0 {
		t.Errorf("SessionsByID(old id) = %v after rotation, want none", got)
	}
	if diff := cmp.Diff([]string{"agent:main:c"}, keys("rotated")); diff != "" {
		t.Errorf("SessionsByID(rotated) (-want +got):\n%s", diff)
	}
}
