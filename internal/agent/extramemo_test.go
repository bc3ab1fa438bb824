package agent

import (
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
)

// A run reads its session's elevated level and budget from the session's
// extra fields every turn: the same extra is decoded once, and a patched
// extra (another content) is read again on the next call.
func TestSessionExtraMemo(t *testing.T) {
	sess := &store.Session{Key: "agent:main:main", Extra: json.RawMessage(`{"elevatedLevel":"ask","budget":{"maxRuns":3},"other":[1,2,3]}`)}
	if got := SessionElevatedLevel(sess); got != "ask" {
		t.Fatalf("elevated level = %q, want ask", got)
	}
	if n := testing.AllocsPerRun(50, func() { _ = SessionElevatedLevel(sess) }); n != 0 {
		t.Errorf("SessionElevatedLevel of a seen extra made %v allocations, want 0", n)
	}
	r := &Runner{}
	want := spend.FromExtra(sess.Extra)
	if want.IsZero() {
		t.Fatalf("test extra has no budget under %q", spend.ExtraKey)
	}
	if got := r.limitsOf(sess); got != want {
		t.Errorf("limitsOf = %+v, want %+v", got, want)
	}
	if n := testing.AllocsPerRun(50, func() { _ = r.limitsOf(sess) }); n != 0 {
		t.Errorf("limitsOf of a seen extra made %v allocations, want 0", n)
	}

	// A session patch replaces the extra: the next run sees the change.
	patched := *sess
	if err := SetSessionElevatedLevel(&patched, "full"); err != nil {
		t.Fatal(err)
	}
	if got := SessionElevatedLevel(&patched); got != "full" {
		t.Errorf("after the patch elevated level = %q, want full", got)
	}
	patched.Extra = json.RawMessage(`{"elevatedLevel":"full","budget":{"maxRuns":7}}`)
	if got := r.limitsOf(&patched); got.Runs != 7 {
		t.Errorf("after the patch limits = %+v, want maxRuns 7", got)
	}
	if got := SessionElevatedLevel(sess); got != "ask" {
		t.Errorf("the unpatched session's level = %q, want ask", got)
	}
	if got := SessionElevatedLevel(nil); got != "" {
		t.Errorf("nil session's level = %q", got)
	}
	if got := SessionElevatedLevel(&store.Session{Extra: json.RawMessage(`{"elevatedLevel":`)}); got != "" {
		t.Errorf("broken extra's level = %q, want none", got)
	}
}

// Every chat.send reads its session's /queue override: the same extra is
// decoded once, a patched one again, and the numbers handed out are the
// caller's own.
func TestSessionQueueOverrideMemo(t *testing.T) {
	sess := &store.Session{Key: "agent:main:main", Extra: json.RawMessage(`{"queueMode":"collect","queueCap":5,"elevatedLevel":"ask"}`)}
	got := SessionQueueOverride(sess)
	if got.Mode != "collect" || got.Cap == nil || *got.Cap != 5 || got.DebounceMs != nil {
		t.Fatalf("override = %+v, want collect with cap 5", got)
	}
	*got.Cap = 9 // the caller's copy
	if again := SessionQueueOverride(sess); again.Cap == nil || *again.Cap != 5 {
		t.Errorf("a caller's change reached the memo: cap %v", again.Cap)
	}
	plain := &store.Session{Key: "agent:main:other", Extra: json.RawMessage(`{"elevatedLevel":"ask","label":"x"}`)}
	if o := SessionQueueOverride(plain); o != (policy.QueueOverride{}) {
		t.Errorf("override of an extra without one = %+v", o)
	}
	if n := testing.AllocsPerRun(50, func() { _ = SessionQueueOverride(plain) }); n != 0 {
		t.Errorf("SessionQueueOverride of a seen extra made %v allocations, want 0", n)
	}
	patched := *sess
	five := 5
	if err := SetSessionQueueOverride(&patched, policy.QueueOverride{Mode: "steer", Cap: &five}); err != nil {
		t.Fatal(err)
	}
	if o := SessionQueueOverride(&patched); o.Mode != "steer" {
		t.Errorf("after the patch mode = %q, want steer", o.Mode)
	}
	if o := SessionQueueOverride(&store.Session{Extra: json.RawMessage(`{"queueMode":`)}); o != (policy.QueueOverride{}) {
		t.Errorf("broken extra's override = %+v, want none", o)
	}
}
