package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// fullRun returns a run with every field set.
func fullRun(id, sessionKey string, status store.RunStatus, created time.Time) *store.Run {
	r := &store.Run{
		RunID:      id,
		SessionKey: sessionKey,
		SessionID:  "sid-" + pad12(sessionKey),
		AgentID:    "main",
		Lane:       "session:" + sessionKey,
		Status:     status,
		Input:      json.RawMessage(`{"message":"hi","deliver":true}`),
		CreatedAt:  created,
	}
	if status != store.RunQueued {
		r.StartedAt = created.Add(time.Second)
	}
	if status.Terminal() {
		r.EndedAt = created.Add(2 * time.Second)
		r.StopReason = "stop"
		r.Usage = transcript.Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4, TotalTokens: 10,
			Cost: &transcript.Cost{Input: 0.5, Output: 0.25, Total: 0.75}}
	}
	if status == store.RunError {
		r.Error = "provider: 500"
	}
	return r
}

func mustCreateRun(t *testing.T, s store.Store, r *store.Run) {
	t.Helper()
	if err := s.CreateRun(context.Background(), r); err != nil {
		t.Fatalf("CreateRun(%q): %v", r.RunID, err)
	}
}

func mustGetRun(t *testing.T, s store.Store, id string) *store.Run {
	t.Helper()
	r, err := s.GetRun(context.Background(), id)
	if err != nil {
		t.Fatalf("GetRun(%q): %v", id, err)
	}
	return r
}

func testRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, st := range []store.RunStatus{store.RunQueued, store.RunRunning, store.RunOK, store.RunError} {
		want := fullRun("run-"+string(st), "agent:main:main", st, at(1))
		mustCreateRun(t, s, want)
		if diff := cmp.Diff(want, mustGetRun(t, s, want.RunID), cmpOpts); diff != "" {
			t.Errorf("GetRun after CreateRun (-want +got):\n%s", diff)
		}
	}
	dup := fullRun("run-queued", "agent:main:other", store.RunRunning, at(2))
	wantErr(t, "CreateRun of an existing id", s.CreateRun(ctx, dup), store.ErrConflict)
	if got := mustGetRun(t, s, "run-queued"); got.SessionKey != "agent:main:main" || got.Status != store.RunQueued {
		t.Errorf("conflicting CreateRun changed the row: %+v", got)
	}
	_, err := s.GetRun(ctx, "run-missing")
	wantErr(t, "GetRun of a missing id", err, store.ErrNotFound)

	// A minimal run keeps its zero fields zero.
	minimal := &store.Run{RunID: "run-min", SessionKey: "agent:main:main", Status: store.RunQueued, CreatedAt: at(3)}
	mustCreateRun(t, s, minimal)
	if diff := cmp.Diff(minimal, mustGetRun(t, s, "run-min"), cmpOpts); diff != "" {
		t.Errorf("minimal run round trip (-want +got):\n%s", diff)
	}
}

func testUpdateRun(t *testing.T, s store.Store) {
	ctx := context.Background()
	boom := errors.New("boom")
	orig := fullRun("run-1", "agent:main:main", store.RunQueued, at(1))
	mustCreateRun(t, s, orig)

	_, err := s.UpdateRun(ctx, "run-missing", func(*store.Run) error { return nil })
	wantErr(t, "UpdateRun of a missing id", err, store.ErrNotFound)

	_, err = s.UpdateRun(ctx, "run-1", func(r *store.Run) error {
		r.Status = store.RunRunning
		r.Input[0] = 'X'
		return boom
	})
	wantErr(t, "UpdateRun with failing fn", err, boom)
	if diff := cmp.Diff(orig, mustGetRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("failing fn changed the run (-want +got):\n%s", diff)
	}

	got, err := s.UpdateRun(ctx, "run-1", func(r *store.Run) error {
		if diff := cmp.Diff(orig, r, cmpOpts); diff != "" {
			t.Errorf("fn's run (-want +got):\n%s", diff)
		}
		r.Status = store.RunRunning
		r.StartedAt = at(5)
		r.SessionID = "rotated"
		r.Input = json.RawMessage(`{"message":"edited"}`)
		r.Usage.Input = 3
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateRun: %v", err)
	}
	want := orig.Clone()
	want.Status = store.RunRunning
	want.StartedAt = at(5)
	want.SessionID = "rotated"
	want.Input = json.RawMessage(`{"message":"edited"}`)
	want.Usage.Input = 3
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("UpdateRun result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustGetRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("stored run after UpdateRun (-want +got):\n%s", diff)
	}
}

func testListRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	runs := []*store.Run{
		fullRun("r-b", "agent:main:main", store.RunOK, at(1)),
		fullRun("r-a", "agent:main:main", store.RunRunning, at(1)), // ties with r-b: RunID order
		fullRun("r-c", "agent:main:other", store.RunQueued, at(2)),
		fullRun("r-d", "agent:main:main", store.RunQueued, at(3)),
		fullRun("r-e", "agent:main:other", store.RunError, at(0)),
	}
	for _, r := range runs {
		mustCreateRun(t, s, r)
	}
	tests := []struct {
		name string
		f    store.RunFilter
		want []string
	}{
		{"all", store.RunFilter{}, []string{"r-e", "r-a", "r-b", "r-c", "r-d"}},
		{"session", store.RunFilter{SessionKey: "agent:main:main"}, []string{"r-a", "r-b", "r-d"}},
		{"statuses", store.RunFilter{Statuses: []store.RunStatus{store.RunQueued, store.RunRunning}}, []string{"r-a", "r-c", "r-d"}},
		{"one status", store.RunFilter{Statuses: []store.RunStatus{store.RunError}}, []string{"r-e"}},
		{"session and status", store.RunFilter{SessionKey: "agent:main:other", Statuses: []store.RunStatus{store.RunQueued}}, []string{"r-c"}},
		{"limit", store.RunFilter{Limit: 2}, []string{"r-e", "r-a"}},
		{"newest", store.RunFilter{Newest: true, Limit: 3}, []string{"r-d", "r-c", "r-b"}},
		{"keys", store.RunFilter{SessionKeys: []string{"agent:main:other", "agent:main:nobody"}}, []string{"r-e", "r-c"}},
		{"keys newest", store.RunFilter{SessionKeys: []string{"agent:main:other", "agent:main:main"}, Newest: true, Limit: 2}, []string{"r-d", "r-c"}},
		{"keys and key", store.RunFilter{SessionKey: "agent:main:main", SessionKeys: []string{"agent:main:other"}}, nil},
		{"none", store.RunFilter{SessionKey: "agent:main:nobody"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListRuns(ctx, tt.f)
			if err != nil {
				t.Fatalf("ListRuns(%+v): %v", tt.f, err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.RunID)
			}
			if diff := cmp.Diff(tt.want, ids, cmpOpts); diff != "" {
				t.Errorf("ListRuns(%+v) ids (-want +got):\n%s", tt.f, diff)
			}
		})
	}
	got, err := s.ListRuns(ctx, store.RunFilter{SessionKey: "agent:main:other", Statuses: []store.RunStatus{store.RunError}})
	if err != nil || len(got) != 1 {
		t.Fatalf("ListRuns: %v, %d rows", err, len(got))
	}
	if diff := cmp.Diff(runs[4], got[0], cmpOpts); diff != "" {
		t.Errorf("listed run (-want +got):\n%s", diff)
	}
}

func testFinishRun(t *testing.T, s store.Store) {
	ctx := context.Background()
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	sess := &store.Session{
		Key: "agent:main:main", SessionID: "s1", AgentID: "main",
		InputTokens: 11, OutputTokens: 22, TotalTokens: 33, ContextTokens: 1000,
		AbortedLastRun: true, CreatedAt: past, UpdatedAt: past,
	}
	mustCreate(t, s, sess)
	mustCreateRun(t, s, fullRun("run-1", sess.Key, store.RunRunning, at(1)))

	_, err := s.FinishRun(ctx, "run-missing", store.RunResult{Status: store.RunOK})
	wantErr(t, "FinishRun of a missing run", err, store.ErrNotFound)
	if _, err := s.FinishRun(ctx, "run-1", store.RunResult{Status: store.RunRunning}); err == nil {
		t.Errorf("FinishRun with a live status succeeded")
	}
	if got := mustGetRun(t, s, "run-1"); got.Status != store.RunRunning {
		t.Fatalf("rejected FinishRun changed status to %q", got.Status)
	}

	usage := transcript.Usage{Input: 5, Output: 7, CacheRead: 2, TotalTokens: 14,
		Cost: &transcript.Cost{Input: 0.01, Output: 0.02, Total: 0.03}}
	res := store.RunResult{Status: store.RunOK, StopReason: "stop", Usage: usage, EndedAt: at(100)}
	got, err := s.FinishRun(ctx, "run-1", res)
	if err != nil {
		t.Fatalf("FinishRun: %v", err)
	}
	want := fullRun("run-1", sess.Key, store.RunRunning, at(1))
	want.Status = store.RunOK
	want.StopReason = "stop"
	want.Usage = usage
	want.EndedAt = at(100)
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("FinishRun result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustGetRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("stored run after FinishRun (-want +got):\n%s", diff)
	}
	after := mustGet(t, s, sess.Key)
	if after.InputTokens != 16 || after.OutputTokens != 29 || after.TotalTokens != 47 {
		t.Errorf("session tokens = %d/%d/%d, want 16/29/47", after.InputTokens, after.OutputTokens, after.TotalTokens)
	}
	if after.ContextTokens != 1000 {
		t.Errorf("ContextTokens = %d, want unchanged 1000", after.ContextTokens)
	}
	if after.AbortedLastRun {
		t.Errorf("AbortedLastRun still set after an ok run")
	}
	if !after.SystemSent {
		t.Errorf("SystemSent not set by a run that had started")
	}
	if !after.UpdatedAt.After(past) {
		t.Errorf("UpdatedAt = %v, not bumped past %v", after.UpdatedAt, past)
	}

	// A terminal run cannot finish again, and nothing changes.
	_, err = s.FinishRun(ctx, "run-1", store.RunResult{Status: store.RunAborted, Usage: usage})
	wantErr(t, "second FinishRun", err, store.ErrConflict)
	if diff := cmp.Diff(want, mustGetRun(t, s, "run-1"), cmpOpts); diff != "" {
		t.Errorf("second FinishRun changed the run (-want +got):\n%s", diff)
	}
	if again := mustGet(t, s, sess.Key); again.InputTokens != 16 || again.AbortedLastRun {
		t.Errorf("second FinishRun changed the session: %+v", again)
	}

	// An aborted run (here straight from queued) sets AbortedLastRun, and
	// leaves SystemSent alone.
	fresh := &store.Session{Key: "agent:main:fresh", SessionID: "s-fresh", AgentID: "main", CreatedAt: past, UpdatedAt: past}
	mustCreate(t, s, fresh)
	queued := fullRun("run-q", fresh.Key, store.RunQueued, at(150))
	queued.StartedAt = time.Time{}
	mustCreateRun(t, s, queued)
	if _, err := s.FinishRun(ctx, "run-q", store.RunResult{Status: store.RunAborted, Error: "aborted before start"}); err != nil {
		t.Fatalf("FinishRun queued: %v", err)
	}
	if f := mustGet(t, s, fresh.Key); f.SystemSent || !f.AbortedLastRun {
		t.Errorf("session after a run aborted before start: %+v", f)
	}
	mustCreateRun(t, s, fullRun("run-2", sess.Key, store.RunQueued, at(200)))
	got, err = s.FinishRun(ctx, "run-2", store.RunResult{Status: store.RunAborted, Error: "aborted by user"})
	if err != nil {
		t.Fatalf("FinishRun aborted: %v", err)
	}
	if got.Status != store.RunAborted || got.Error != "aborted by user" || got.EndedAt.IsZero() {
		t.Errorf("aborted run = %+v", got)
	}
	if after := mustGet(t, s, sess.Key); !after.AbortedLastRun || after.InputTokens != 16 {
		t.Errorf("session after aborted run: aborted %v, input %d; want true, 16", after.AbortedLastRun, after.InputTokens)
	}

	// A run whose session is gone still finishes.
	mustCreateRun(t, s, fullRun("run-3", "agent:main:gone", store.RunRunning, at(300)))
	if _, err := s.FinishRun(ctx, "run-3", store.RunResult{Status: store.RunError, Error: "x", Usage: usage}); err != nil {
		t.Errorf("FinishRun without a session: %v", err)
	}
	_, err = s.GetSession(ctx, "agent:main:gone")
	wantErr(t, "session of run-3", err, store.ErrNotFound)
}

func testAbortInterrupted(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, k := range []string{"agent:main:a", "agent:main:b", "agent:main:c"} {
		mustCreate(t, s, &store.Session{Key: k, SessionID: "sid-" + k, CreatedAt: at(0), UpdatedAt: at(0)})
	}
	runs := []*store.Run{
		fullRun("r1", "agent:main:a", store.RunRunning, at(1)),
		fullRun("r2", "agent:main:b", store.RunRunning, at(2)),
		fullRun("r3", "agent:main:c", store.RunQueued, at(3)),
		fullRun("r4", "agent:main:c", store.RunOK, at(4)),
		fullRun("r5", "agent:main:a", store.RunRunning, at(5)),
	}
	for _, r := range runs {
		mustCreateRun(t, s, r)
	}
	const text = "gateway restarted"
	got, err := s.AbortInterrupted(ctx, at(500), text)
	if err != nil {
		t.Fatalf("AbortInterrupted: %v", err)
	}
	var want []*store.Run
	for _, i := range []int{0, 1, 4} {
		r := runs[i].Clone()
		r.Status = store.RunAborted
		r.Error = text
		r.EndedAt = at(500)
		want = append(want, r)
	}
	slices.SortFunc(got, func(a, b *store.Run) int { return strings.Compare(a.RunID, b.RunID) })
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("AbortInterrupted result (-want +got):\n%s", diff)
	}
	for _, r := range want {
		if diff := cmp.Diff(r, mustGetRun(t, s, r.RunID), cmpOpts); diff != "" {
			t.Errorf("stored %s (-want +got):\n%s", r.RunID, diff)
		}
	}
	for _, r := range runs[2:4] {
		if diff := cmp.Diff(r, mustGetRun(t, s, r.RunID), cmpOpts); diff != "" {
			t.Errorf("AbortInterrupted touched %s (-want +got):\n%s", r.RunID, diff)
		}
	}
	for k, aborted := range map[string]bool{"agent:main:a": true, "agent:main:b": true, "agent:main:c": false} {
		if got := mustGet(t, s, k).AbortedLastRun; got != aborted {
			t.Errorf("%s: AbortedLastRun = %v, want %v", k, got, aborted)
		}
	}
	again, err := s.AbortInterrupted(ctx, at(600), text)
	if err != nil || len(again) != 0 {
		t.Errorf("second AbortInterrupted = %d runs, %v; want none", len(again), err)
	}
}

func testUsageByDay(t *testing.T, s store.Store) {
	ctx := context.Background()
	day0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id string, ended time.Time, u transcript.Usage) {
		t.Helper()
		r := fullRun(id, "agent:main:usage", store.RunOK, ended.Add(-2*time.Second))
		r.EndedAt = ended
		r.Usage = u
		mustCreateRun(t, s, r)
	}
	withCost := transcript.Usage{Input: 10, Output: 5, TotalTokens: 15, Cost: &transcript.Cost{Input: 0.1, Output: 0.2, Total: 0.3}}
	noCost := transcript.Usage{Input: 1, Output: 1, TotalTokens: 2}
	mk("u1", day0.Add(1*time.Hour), withCost)
	mk("u2", day0.Add(23*time.Hour), noCost)
	mk("u3", day0.Add(25*time.Hour), withCost)
	mk("u4", day0.Add(-time.Hour), withCost) // before the range
	// A live run (no end) counts nowhere.
	live := fullRun("u5", "agent:main:usage", store.RunRunning, day0)
	mustCreateRun(t, s, live)

	got, err := s.UsageByDay(ctx, day0, day0.Add(48*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("days = %+v, want 2", got)
	}
	d0, d1 := got[0], got[1]
	if !d0.Day.Equal(day0) || d0.Runs != 2 || d0.Usage.Input != 11 || d0.Usage.TotalTokens != 17 || d0.MissingCost != 1 {
		t.Errorf("day 0 = %+v", d0)
	}
	if d0.Usage.Cost == nil || d0.Usage.Cost.Total < 0.29 || d0.Usage.Cost.Total > 0.31 {
		t.Errorf("day 0 cost = %+v", d0.Usage.Cost)
	}
	if !d1.Day.Equal(day0.Add(24*time.Hour)) || d1.Runs != 1 || d1.MissingCost != 0 {
		t.Errorf("day 1 = %+v", d1)
	}

	// In UTC+2 the run at 23:00 UTC belongs to the next day, and the one
	// at 23:00 the day before to the first.
	got, err = s.UsageByDay(ctx, day0.Add(-2*time.Hour), day0.Add(46*time.Hour), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Runs != 2 || got[0].MissingCost != 0 || got[1].Runs != 2 || got[1].MissingCost != 1 {
		t.Fatalf("UTC+2 days = %+v", got)
	}
	if _, off := got[0].Day.Zone(); off != 7200 || got[0].Day.Hour() != 0 {
		t.Errorf("day in zone: %v", got[0].Day)
	}
	if got, err := s.UsageByDay(ctx, day0.Add(100*time.Hour), day0.Add(200*time.Hour), 0); err != nil || len(got) != 0 {
		t.Errorf("empty range = %+v, %v", got, err)
	}
}

// testRunStats: FinishRun counts the messages the run wrote (not those of
// other runs of the transcript), and RunsUsage returns finished runs by
// their end with their usage and counts, filtered by agent and session.
func testRunStats(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	start := func(id, key, sid string) {
		t.Helper()
		r := fullRun(id, key, store.RunQueued, t0)
		r.SessionID, r.AgentID = "", strings.Split(key, ":")[1]
		mustCreateRun(t, s, r)
		in := textMsg(transcript.RoleUser, "go")
		in.RunID = id
		if _, _, err := s.StartRun(ctx, id, t0, sid, []store.Message{in}); err != nil {
			t.Fatal(err)
		}
	}
	appendMsgs := func(sid, runID string, msgs ...*transcript.Message) {
		t.Helper()
		var ms []store.Message
		for _, m := range msgs {
			m.Timestamp = base.UnixMilli()
			ms = append(ms, store.Message{RunID: runID, Entry: transcript.Entry{Type: transcript.TypeMessage, Timestamp: transcript.FormatTime(base), Message: m}})
		}
		if _, err := s.AppendMessages(ctx, sid, ms); err != nil {
			t.Fatal(err)
		}
	}
	isErr := true
	calls := &transcript.Message{Role: transcript.RoleAssistant, Content: transcript.Content{Blocks: []transcript.Block{
		transcript.TextBlock("let me look"),
		transcript.ToolCallBlock("c1", "exec", json.RawMessage(`{}`)),
		transcript.ToolCallBlock("c2", "read", json.RawMessage(`{}`)),
		transcript.ToolCallBlock("c3", "exec", json.RawMessage(`{}`)),
	}}, StopReason: "toolUse"}
	result := func(id, name string, failed bool) *transcript.Message {
		m := &transcript.Message{Role: transcript.RoleToolResult, ToolCallID: id, ToolName: name, Content: transcript.StringContent("out")}
		if failed {
			m.IsError = &isErr
		}
		return m
	}
	start("stats-1", "agent:main:stats", "sid-stats")
	appendMsgs("sid-stats", "stats-1", calls, result("c1", "exec", false), result("c2", "read", true), result("c3", "exec", false),
		&transcript.Message{Role: transcript.RoleAssistant, Content: transcript.StringContent("done"), StopReason: "stop"})
	appendMsgs("sid-stats", "", &transcript.Message{Role: transcript.RoleUser, Content: transcript.StringContent("not the run's")})
	if _, err := s.FinishRun(ctx, "stats-1", store.RunResult{Status: store.RunOK, EndedAt: t0.Add(time.Minute),
		Usage: transcript.Usage{Input: 30, Output: 12, TotalTokens: 42, Cost: &transcript.Cost{Total: 0.5}}}); err != nil {
		t.Fatal(err)
	}
	start("stats-2", "agent:other:x", "sid-other")
	appendMsgs("sid-other", "stats-2", &transcript.Message{Role: transcript.RoleAssistant, Content: transcript.StringContent(""), StopReason: "error"})
	if _, err := s.FinishRun(ctx, "stats-2", store.RunResult{Status: store.RunError, EndedAt: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	mustCreateRun(t, s, fullRun("stats-live", "agent:main:stats", store.RunRunning, t0)) // not finished: nowhere

	got, err := s.RunsUsage(ctx, store.RunUsageFilter{From: t0, To: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want1 := store.RunStats{User: 1, Assistant: 2, ToolCalls: 3, ToolResults: 3, Errors: 1, Tools: map[string]int64{"exec": 2, "read": 1}}
	want2 := store.RunStats{User: 1, Assistant: 1, Errors: 1}
	if len(got) != 2 || got[0].RunID != "stats-1" || got[1].RunID != "stats-2" {
		t.Fatalf("RunsUsage = %+v", got)
	}
	if !reflect.DeepEqual(got[0].Stats, want1) || !reflect.DeepEqual(got[1].Stats, want2) {
		t.Errorf("stats = %+v, %+v; want %+v, %+v", got[0].Stats, got[1].Stats, want1, want2)
	}
	if r := got[0]; r.SessionKey != "agent:main:stats" || !r.EndedAt.Equal(t0.Add(time.Minute)) || r.Usage.TotalTokens != 42 || r.Usage.Cost == nil || r.Usage.Cost.Total != 0.5 {
		t.Errorf("run 1 = %+v", r)
	}
	for _, tt := range []struct {
		f    store.RunUsageFilter
		want int
	}{
		{store.RunUsageFilter{From: t0, To: t0.Add(time.Hour), AgentID: "other"}, 1},
		{store.RunUsageFilter{From: t0, To: t0.Add(time.Hour), SessionKey: "agent:main:stats"}, 1},
		{store.RunUsageFilter{From: t0, To: t0.Add(90 * time.Second)}, 1},
		{store.RunUsageFilter{From: t0, To: t0.Add(time.Hour), Limit: 1}, 1},
		{store.RunUsageFilter{From: t0.Add(time.Hour), To: t0.Add(2 * time.Hour)}, 0},
	} {
		if got, err := s.RunsUsage(ctx, tt.f); err != nil || len(got) != tt.want {
			t.Errorf("RunsUsage(%+v) = %+v, %v; want %d runs", tt.f, got, err, tt.want)
		}
	}
}

func testStartRun(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	q := fullRun("start-1", "agent:main:start", store.RunQueued, t0)
	q.SessionID = ""
	mustCreateRun(t, s, q)

	msg := textMsg(transcript.RoleUser, "the input")
	msg.RunID = "start-1"
	run, stored, err := s.StartRun(ctx, "start-1", t0.Add(time.Second), "sid-start", []store.Message{msg})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunRunning || !run.StartedAt.Equal(t0.Add(time.Second)) || run.SessionID != "sid-start" {
		t.Errorf("run = %+v", run)
	}
	if len(stored) != 1 || stored[0].Seq != 1 || stored[0].RunID != "start-1" || stored[0].Entry.ID == "" {
		t.Errorf("stored = %+v", stored)
	}
	if got := mustGetRun(t, s, "start-1"); got.Status != store.RunRunning || got.SessionID != "sid-start" {
		t.Errorf("stored run = %+v", got)
	}
	hist, err := s.History(ctx, "sid-start", store.HistoryOptions{})
	if err != nil || len(hist) != 1 || hist[0].Entry.Message.Content.Text() != "the input" {
		t.Fatalf("history = %+v, %v", hist, err)
	}

	// Starting again (a duplicate enqueue, or a run aborted meanwhile)
	// conflicts and writes nothing.
	if _, _, err := s.StartRun(ctx, "start-1", t0, "sid-start", []store.Message{msg}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second StartRun = %v, want ErrConflict", err)
	}
	if n, _ := s.CountMessages(ctx, "sid-start"); n != 1 {
		t.Errorf("%d messages after a refused start, want 1", n)
	}
	if _, _, err := s.StartRun(ctx, "nope", t0, "sid-start", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("StartRun(missing) = %v, want ErrNotFound", err)
	}
	// A message the transcript cannot take leaves the run queued.
	q2 := fullRun("start-2", "agent:main:start", store.RunQueued, t0)
	mustCreateRun(t, s, q2)
	if _, _, err := s.StartRun(ctx, "start-2", t0, "sid-start", []store.Message{{}}); err == nil {
		t.Error("StartRun with an invalid message succeeded")
	}
	if got := mustGetRun(t, s, "start-2"); got.Status != store.RunQueued {
		t.Errorf("run after a failed start = %s, want queued", got.Status)
	}
	// Concurrent starts of one run: exactly one wins, one message.
	q3 := fullRun("start-3", "agent:main:start", store.RunQueued, t0)
	mustCreateRun(t, s, q3)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			m := textMsg(transcript.RoleUser, "race")
			if _, _, err := s.StartRun(ctx, "start-3", t0, "sid-race", []store.Message{m}); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("concurrent StartRun: %v", err)
			}
		})
	}
	wg.Wait()
	if n, _ := s.CountMessages(ctx, "sid-race"); wins.Load() != 1 || n != 1 {
		t.Errorf("concurrent starts: %d won, %d messages; want 1 and 1", wins.Load(), n)
	}
}
