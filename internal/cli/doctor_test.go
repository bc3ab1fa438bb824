package cli

import (
	"strings"
	"testing"
)

// TestPrintDoctorChecks: every line of a check's detail and fix stays in
// the detail column, so a config with several errors reads as a list
// under its check rather than from the left margin.
func TestPrintDoctorChecks(t *testing.T) {
	var b strings.Builder
	err := printDoctorChecks(&b, []DoctorCheck{
		{Name: "config", Status: "FAIL", Detail: "a.json5:2: gateway.port: must be an integer\na.json5:3: gateway.bind: must be a string", Fix: "fix the config file"},
		{Name: "state dir", Status: "ok", Detail: "/s writable", Fix: "never shown"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "FAIL  config     a.json5:2: gateway.port: must be an integer\n" +
		"                 a.json5:3: gateway.bind: must be a string\n" +
		"                 fix: fix the config file\n" +
		"ok    state dir  /s writable\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
