package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// chatMsg is a message of role with text, stored with runID.
func chatMsg(role, text, runID string) store.Message {
	m := &transcript.Message{Role: role, Content: transcript.StringContent(text)}
	if role == transcript.RoleAssistant {
		m.StopReason = "stop"
	}
	return store.Message{RunID: runID, Entry: transcript.MessageEntry(m, time.Now())}
}

// checkChain fails unless transcript sid holds want messages numbered 1..want,
// each the child of the one before, and the writer's memo, when it holds
// the tail, holds the stored one.
func checkChain(t *testing.T, s *Store, sid string, want int) {
	t.Helper()
	msgs, err := s.History(context.Background(), sid, store.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != want {
		t.Fatalf("%s holds %d messages, want %d", sid, len(msgs), want)
	}
	prev := ""
	for i, m := range msgs {
		parent := ""
		if m.Entry.ParentID != nil {
			parent = *m.Entry.ParentID
		}
		if m.Seq != int64(i+1) || parent != prev {
			t.Fatalf("%s message %d: seq %d parent %q, want seq %d parent %q", sid, i, m.Seq, parent, i+1, prev)
		}
		prev = m.Entry.ID
	}
	// The memo is the committer's: read it on the committer.
	if err := s.writeTx(context.Background(), func(context.Context, wtx) error {
		if tl, ok := s.memo.tailOf(sid); ok && (tl.seq != int64(want) || tl.id != prev) {
			t.Errorf("memo holds tail %+v of %s, want seq %d id %q", tl, sid, want, prev)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMemoFollowsRollback: what a body that fails, or a shared commit that
// breaks, set in the writer's memo is undone, so the appends that follow
// chain on the stored tail; and a transcript deleted with its session
// starts again at seq 1.
func TestMemoFollowsRollback(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	const sid = "sid-memo"
	appended := 0
	if _, err := s.AppendMessages(ctx, sid, []store.Message{chatMsg(transcript.RoleUser, "first", "")}); err != nil {
		t.Fatal(err)
	}
	appended++
	errBody := errors.New("body failed")
	appendThenFail := func(ctx context.Context, tx wtx) error {
		out, err := s.prepareMessages(sid, []store.Message{chatMsg(transcript.RoleUser, "lost", "")})
		if err != nil {
			return err
		}
		if err := s.appendTx(ctx, tx, sid, out, ""); err != nil {
			return err
		}
		return errBody
	}
	// Alone.
	if err := s.writeTx(ctx, appendThenFail); !errors.Is(err, errBody) {
		t.Fatalf("failing body: %v", err)
	}
	if _, err := s.AppendMessages(ctx, sid, []store.Message{chatMsg(transcript.RoleUser, "second", "")}); err != nil {
		t.Fatal(err)
	}
	appended++
	checkChain(t, s, sid, appended)

	// In a shared commit, between appends that stay, and in one that
	// breaks.
	for _, breaks := range []bool{false, true} {
		started, release := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := s.writeTx(ctx, func(context.Context, wtx) error { close(started); <-release; return nil }); err != nil {
				t.Error(err)
			}
		})
		<-started
		const ok = 6
		errs := make([]error, ok+2)
		for i := range errs {
			wg.Go(func() {
				switch {
				case i == 2:
					errs[i] = s.writeTx(ctx, appendThenFail)
				case i == 4 && breaks:
					errs[i] = s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
						if err := appendThenFail(ctx, tx); !errors.Is(err, errBody) {
							return err
						}
						_, err := tx.ExecContext(ctx, `ROLLBACK`)
						return err
					})
				default:
					_, errs[i] = s.AppendMessages(ctx, sid, []store.Message{chatMsg(transcript.RoleUser, fmt.Sprint(i), "")})
				}
			})
		}
		for s.commits.reqsWaiting() < len(errs) {
			runtime.Gosched()
		}
		close(release)
		wg.Wait()
		for i, err := range errs {
			switch {
			case i == 2 && !errors.Is(err, errBody):
				t.Errorf("failing body: %v", err)
			case i == 4 && breaks && err == nil:
				t.Error("the body that ended the transaction reported success")
			case i != 2 && !(i == 4 && breaks) && err != nil:
				t.Errorf("append %d: %v", i, err)
			case i != 2 && !(i == 4 && breaks):
				appended++
			}
		}
		checkChain(t, s, sid, appended)
	}

	// A transcript deleted with its session starts again.
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:memo", SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "agent:main:memo", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, sid, []store.Message{chatMsg(transcript.RoleUser, "anew", "")}); err != nil {
		t.Fatal(err)
	}
	checkChain(t, s, sid, 1)
}

// TestEndRunFromMemo: the end of a run OpenRun stored takes its row and
// counts from the writer's memo. It stores what reading them would (the
// counts of the run's messages only, the run as read back, what is left
// after its transcript was deleted), leaves the cached session as the
// stored row, and still refuses an end twice or after the run was aborted
// or ended by UpdateRun.
func TestEndRunFromMemo(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	const key, sid = "agent:main:memo", "sid-memo"
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: sid, AgentID: "main", InputTokens: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx, key); err != nil { // cached from here on
		t.Fatal(err)
	}
	open := func(runID string) {
		t.Helper()
		now := time.Now()
		r := &store.Run{RunID: runID, SessionKey: key, SessionID: sid, AgentID: "main", Status: store.RunRunning,
			StartedAt: now, Input: json.RawMessage(`{"message":"hi"}`)}
		if _, _, err := s.OpenRun(ctx, r, []store.Message{chatMsg(transcript.RoleUser, "go", runID)}); err != nil {
			t.Fatal(err)
		}
		if err := s.writeTx(ctx, func(context.Context, wtx) error {
			if _, ok := s.memo.run(runID); !ok {
				t.Errorf("the memo does not hold run %s, just opened", runID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	open("memo-1")
	calls := &transcript.Message{Role: transcript.RoleAssistant, StopReason: "toolUse", Content: transcript.Content{Blocks: []transcript.Block{
		transcript.ToolCallBlock("c1", "exec", json.RawMessage(`{}`)), transcript.ToolCallBlock("c2", "read", json.RawMessage(`{}`))}}}
	isErr := true
	failed := &transcript.Message{Role: transcript.RoleToolResult, ToolCallID: "c2", ToolName: "read", IsError: &isErr, Content: transcript.StringContent("no")}
	if _, err := s.AppendMessages(ctx, sid, []store.Message{
		{RunID: "memo-1", Entry: transcript.MessageEntry(calls, time.Now())},
		{RunID: "memo-1", Entry: transcript.MessageEntry(failed, time.Now())},
		chatMsg(transcript.RoleUser, "another run's", "other"),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, "sid-elsewhere", []store.Message{chatMsg(transcript.RoleUser, "another transcript's", "memo-1")}); err != nil {
		t.Fatal(err)
	}
	res := store.RunResult{Status: store.RunOK, StopReason: "stop", Usage: transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}}
	ended, _, err := s.EndRun(ctx, "memo-1", res, sid, []store.Message{chatMsg(transcript.RoleAssistant, "done", "memo-1")})
	if err != nil {
		t.Fatal(err)
	}
	read, err := s.GetRun(ctx, "memo-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ended, read) {
		t.Errorf("EndRun returned\n%+v\nwhich reads back as\n%+v", ended, read)
	}
	var counted []byte
	if err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		counted, err = s.runStatsTx(ctx, tx, read)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := s.r.QueryRow(`SELECT stats FROM runs WHERE run_id = 'memo-1'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := `{"user":1,"assistant":2,"toolCalls":2,"toolResults":1,"errors":1,"tools":{"exec":1,"read":1}}`; stored != string(counted) || stored != want {
		t.Errorf("stored counts %s, counting the messages gives %s, want %s", stored, counted, want)
	}
	cached, err := s.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	row, err := scanSession(s.queryRow(ctx, qGetSession, key))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cached, row) || row.InputTokens != 15 || !row.SystemSent || !row.UpdatedAt.Equal(read.EndedAt) {
		t.Errorf("cached session\n%+v\nstored\n%+v", cached, row)
	}
	if _, _, err := s.EndRun(ctx, "memo-1", res, sid, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second end: %v, want ErrConflict", err)
	}

	open("memo-2")
	if _, err := s.UpdateRun(ctx, "memo-2", func(r *store.Run) error { r.Status = store.RunError; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EndRun(ctx, "memo-2", res, sid, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("end after UpdateRun ended it: %v, want ErrConflict", err)
	}
	open("memo-3")
	if _, err := s.AbortInterrupted(ctx, time.Time{}, "restart"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EndRun(ctx, "memo-3", res, sid, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("end after AbortInterrupted: %v, want ErrConflict", err)
	}
	checkChain(t, s, sid, 7)

	// A run whose transcript is deleted while it runs counts only what
	// its transcript holds at its end.
	open("memo-4")
	if err := s.DeleteSession(ctx, key, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EndRun(ctx, "memo-4", res, sid, []store.Message{chatMsg(transcript.RoleAssistant, "done", "memo-4")}); err != nil {
		t.Fatal(err)
	}
	if err := s.r.QueryRow(`SELECT stats FROM runs WHERE run_id = 'memo-4'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := `{"assistant":1}`; stored != want {
		t.Errorf("counts of a run whose transcript was deleted: %s, want %s", stored, want)
	}
	checkChain(t, s, sid, 1)
}
