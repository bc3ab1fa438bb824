package storetest

import (
	"reflect"
	"testing"
)

// CheckStringFields checks that every string field of the struct *v
// equals want[field name] (the expression the field's value replaced), so
// that a table of statements built one way cannot drift from the way it
// was built before. It fails for a field want lacks, an empty field, and
// a want entry with no field.
func CheckStringFields(t *testing.T, v any, want map[string]string) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	seen := make(map[string]bool, rv.NumField())
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		seen[name] = true
		w, ok := want[name]
		got := rv.Field(i).String()
		switch {
		case !ok:
			t.Errorf("%s.%s is not checked: add the expression it replaces to want", rv.Type().Name(), name)
		case got == "":
			t.Errorf("%s.%s is empty", rv.Type().Name(), name)
		case got != w:
			t.Errorf("%s.%s =\n%s\nwant\n%s", rv.Type().Name(), name, got, w)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("want has %s, which %s lacks", name, rv.Type().Name())
		}
	}
}
