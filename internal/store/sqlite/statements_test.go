package sqlite

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
	"github.com/switchboardhq/switchboard/internal/store/storetest"
)

// TestStatementsMatchSQLStore checks each statement built on first use
// against the expression the package-level var it replaced was
// initialised with, so that building them lazily changes no SQL text;
// every field of statements must be listed.
func TestStatementsMatchSQLStore(t *testing.T) {
	want := map[string]string{
		"insertSession": sqlstore.SQLite.InsertSession("key_class"),
		"upsertSession": sqlstore.UpsertSession("key_class"),
		"claimCronTick": sqlstore.SQLite.ClaimCronTick(),
	}
	storetest.CheckStringFields(t, stmts.Get(), want)
}

// TestOpenKeepsTheStatements checks that a store uses the statements
// built once, and that its connections come from the package's one driver,
// which has the package's functions.
func TestOpenKeepsTheStatements(t *testing.T) {
	s := openTest(t, Options{})
	if s.q != stmts.Get() {
		t.Fatal("Store.q is not the package's statements")
	}
	if d := s.r.Driver(); d != drv.Get() {
		t.Fatalf("reader pool's driver is %p, want the package's %p", d, drv.Get())
	}
	var hit int
	if err := s.r.QueryRow(`SELECT sb_icontains('Hello World', 'world')`).Scan(&hit); err != nil || hit != 1 {
		t.Fatalf("sb_icontains = %d, %v; want 1, nil", hit, err)
	}
}
