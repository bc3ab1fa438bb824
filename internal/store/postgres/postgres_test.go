package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
	"github.com/switchboardhq/switchboard/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openTest opens a Store on a fresh database.
func openTest(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.DB(t), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, Options{}) })
}

// TestConformanceTwoConns runs the suite with a pool of two connections:
// the locks must not need more.
func TestConformanceTwoConns(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, Options{MaxConns: 2}) })
}

func TestCronConformance(t *testing.T) {
	storetest.RunCron(t, func(t *testing.T) store.CronStore { return openTest(t, Options{}) })
}

func TestA2ATaskConformance(t *testing.T) {
	storetest.RunA2ATasks(t, func(t *testing.T, now func() time.Time) store.A2ATaskStore {
		return openTest(t, Options{Now: now})
	})
}
