package subagent

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestKillIsNotAnnounced: a child killed while it runs ends aborted and
// its announce is settled as a skip, so the requester gets no turn about
// it (the reference's suppressAnnounceReason "killed"); a child that had
// ended before the kill is announced as it was.
func TestKillIsNotAnnounced(t *testing.T) {
	e := newEnv(t, `{}`)
	ctx := context.Background()
	done := e.mustSpawn("agent:main:main", map[string]any{"task": "quick\n/reply finished first"})
	e.waitRun(done["runId"].(string))
	e.eventually("the finished child's announce", func() bool {
		return slices.ContainsFunc(e.announces("agent:main:main"), func(s string) bool { return strings.Contains(s, "finished first") })
	})
	if ids, err := e.m.Kill(ctx, done["runId"].(string)); err != nil || len(ids) != 0 {
		t.Fatalf("Kill of an ended child = %v, %v", ids, err)
	}
	if rec, err := e.m.record(ctx, done["runId"].(string)); err != nil || rec.Killed {
		t.Fatalf("an ended child was marked killed: %+v, %v", rec, err)
	}

	out := e.mustSpawn("agent:main:main", map[string]any{"task": "[gate] long\n/reply never"})
	child := out["runId"].(string)
	ids, err := e.m.Kill(ctx, child)
	if err != nil || !slices.Equal(ids, []string{child}) {
		t.Fatalf("Kill = %v, %v", ids, err)
	}
	e.waitRun(child)
	if run, err := e.store.GetRun(ctx, child); err != nil || run.Status != "aborted" {
		t.Fatalf("killed child: %+v, %v", run, err)
	}
	e.eventually("the killed child's announce to settle", func() bool {
		it, err := e.store.GetOutbox(ctx, announceID(child, "agent:main:main"))
		return err == nil && it.Status == "delivered"
	})
	it, err := e.store.GetOutbox(ctx, announceID(child, "agent:main:main"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(it.Payload), `"skip":true`) {
		t.Errorf("killed child's announce %s, want a skip", it.Payload)
	}
	for _, m := range e.announces("agent:main:main") {
		if strings.Contains(m, "long") {
			t.Errorf("the killed child was announced: %q", m)
		}
	}
}
