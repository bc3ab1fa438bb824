package service

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/approval"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

func TestRecoverPendingApprovals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "s.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := st.UpdateSession(ctx, "agent:main:main", true, func(s *store.Session) error {
		s.SessionID, s.AgentID = "sid-1", "main"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := New(settings.Resolve(&config.Config{}), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.journal.Save([]approval.Record{
		{ID: "ap-1", Request: approval.Request{Command: "make deploy", SessionKey: "agent:main:main", ToolCallID: "call-1", RunID: "r1"}},
		{ID: "ap-2", Request: approval.Request{Command: "ls", SessionKey: "agent:main:gone", ToolCallID: "call-2"}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.RecoverPending(ctx, st, log); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.History(ctx, sess.SessionID, store.HistoryOptions{})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("history = %+v, %v", msgs, err)
	}
	m := msgs[0].Entry.Message
	if m.ToolCallID != "call-1" || m.Content.Text() != "Exec denied (gateway id=ap-1, approval-expired: gateway restarted): make deploy" {
		t.Errorf("reported %+v", m)
	}
	if recs, _ := a.journal.Load(); len(recs) != 0 {
		t.Errorf("journal after recovery = %+v", recs)
	}

	// A damaged journal is moved aside; the gateway still starts.
	if err := os.WriteFile(a.journal.Path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.RecoverPending(ctx, st, log); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(a.journal.Path + ".corrupt"); err != nil || !strings.Contains(string(b), "not json") {
		t.Errorf("corrupt journal not kept aside: %v", err)
	}
}
