package admission_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
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

// pgNodes is two nodes' stores on one PostgreSQL database, and node a's
// runner and admission.
type pgNodes struct {
	a, b   *postgres.Store
	runner *agent.Runner
	adm    *admission.Admitter
}

func newPGNodes(t *testing.T, queue policy.QueueConfig) *pgNodes {
	t.Helper()
	dsn := pgtest.DB(t)
	n := &pgNodes{a: openPG(t, dsn), b: openPG(t, dsn)}
	var err error
	n.runner, err = agent.New(agent.Config{
		Store: n.a, Models: scriptedModels{scripted.New(scripted.Options{})},
		Tools:       func(context.Context, agent.RunInfo) *tools.Set { return tools.NewSet() },
		InitSession: admission.FillRunnerSession,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.runner.Close() })
	if n.adm, err = admission.New(admission.Config{Runner: n.runner, Store: n.a, Commands: &replies{}, Queue: queue}); err != nil {
		t.Fatal(err)
	}
	return n
}

// onB changes session key's row on node b (creating it).
func (n *pgNodes) onB(t *testing.T, key string, fn func(*store.Session)) {
	t.Helper()
	if _, err := n.b.UpdateSession(context.Background(), key, true, func(x *store.Session) error {
		admission.FillSession(x, "main", "webchat", time.Now(), uuid.NewString)
		fn(x)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// send has node a accept an operator's message to key.
func (n *pgNodes) send(key, text string) (admission.Ticket, error) {
	return n.adm.Accept(context.Background(), admission.Request{Origin: admission.OriginOperator, Input: input(admission.OriginOperator, key, text)})
}

// TestSendPolicyChangedOnAnotherNode: on PostgreSQL, a node's admission
// that remembers a session whose send policy denied does not keep
// refusing it once another node allowed it (the remembered row is a guess
// that only a run's open checks; a refusal opens no run).
func TestSendPolicyChangedOnAnotherNode(t *testing.T) {
	n := newPGNodes(t, policy.QueueConfig{})
	const key = "agent:main:main"
	n.onB(t, key, func(x *store.Session) { x.SendPolicy = "deny" })
	if _, err := n.send(key, "hi"); !errors.Is(err, admission.ErrSendDenied) {
		t.Fatalf("denied session: %v, want the send policy's refusal", err)
	}
	n.onB(t, key, func(x *store.Session) { x.SendPolicy = "allow" })
	if _, err := n.send(key, "hi"); err != nil {
		t.Fatalf("after another node allowed the session: %v", err)
	}
}

// TestQueueCapRaisedOnAnotherNode: on PostgreSQL, a node that remembers a
// session under the default queue cap does not refuse a message at that
// cap once another node raised the session's own cap.
func TestQueueCapRaisedOnAnotherNode(t *testing.T) {
	one := 1
	n := newPGNodes(t, policy.QueueConfig{Mode: "followup", Cap: &one, Drop: "new"})
	const key = "agent:main:main"
	n.onB(t, key, func(*store.Session) {})
	busyIn := input(admission.OriginOperator, key, "/stall")
	started := make(chan struct{})
	var once sync.Once
	unsub := n.runner.Subscribe(func(ev agent.Event) {
		if ev.RunID == busyIn.RunID && ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseStart {
			once.Do(func() { close(started) })
		}
	})
	defer unsub()
	busy, err := n.adm.Accept(context.Background(), admission.Request{Origin: admission.OriginOperator, Input: busyIn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.runner.Abort(context.Background(), busy.RunID) })
	<-started
	if tk, err := n.send(key, "queued"); err != nil || tk.Position == 0 {
		t.Fatalf("queued: %+v %v", tk, err)
	}
	five := 5
	n.onB(t, key, func(x *store.Session) {
		if err := agent.SetSessionQueueOverride(x, policy.QueueOverride{Cap: &five}); err != nil {
			t.Error(err)
		}
	})
	if tk, err := n.send(key, "one more"); err != nil || tk.Position != 2 {
		t.Fatalf("after another node raised the cap: %+v %v, want it queued", tk, err)
	}
}
