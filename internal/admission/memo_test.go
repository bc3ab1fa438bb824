package admission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
	"github.com/switchboardhq/switchboard/internal/tools"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openPG opens a store on dsn, closed when the test ends.
func openPG(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestSendPolicyChangedOnAnotherNode: on PostgreSQL, a node's admission
// that remembers a session whose send policy denied does not keep
// refusing it once another node allowed it (the remembered row is a guess
// that only a run's open checks; a refusal opens no run).
func TestSendPolicyChangedOnAnotherNode(t *testing.T) {
	dsn := pgtest.DB(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	runner, err := agent.New(agent.Config{
		Store: a, Models: scriptedModels{scripted.New(scripted.Options{})},
		Tools:       func(context.Context, agent.RunInfo) *tools.Set { return tools.NewSet() },
		InitSession: admission.FillRunnerSession,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	adm, err := admission.New(admission.Config{Runner: runner, Store: a, Commands: &replies{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const key = "agent:main:main"
	setPolicy := func(p string) {
		t.Helper()
		if _, err := b.UpdateSession(ctx, key, true, func(x *store.Session) error {
			admission.FillSession(x, "main", "webchat", time.Now(), uuid.NewString)
			x.SendPolicy = p
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	send := func() error {
		_, err := adm.Accept(ctx, admission.Request{Origin: admission.OriginOperator, Input: input(admission.OriginOperator, key, "hi")})
		return err
	}
	setPolicy("deny")
	if err := send(); !errors.Is(err, admission.ErrSendDenied) {
		t.Fatalf("denied session: %v, want the send policy's refusal", err)
	}
	setPolicy("allow")
	if err := send(); err != nil {
		t.Fatalf("after another node allowed the session: %v", err)
	}
}
