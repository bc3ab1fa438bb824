package sqlite

import (
	"reflect"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
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
	v := reflect.ValueOf(stmts.Get()).Elem()
	seen := make(map[string]bool, v.NumField())
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		seen[name] = true
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("statements.%s is not checked: add the expression it replaces to want", name)
		case v.Field(i).String() == "":
			t.Errorf("statements.%s is empty", name)
		case v.Field(i).String() != w:
			t.Errorf("statements.%s =\n%s\nwant\n%s", name, v.Field(i).String(), w)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("want has %s, which statements lacks", name)
		}
	}
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
