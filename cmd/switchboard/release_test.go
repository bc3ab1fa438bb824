package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseBuild builds the binary as releases are built
// (scripts/build-release.sh, mirrored by .goreleaser.yaml) and checks that
// it is static and reports its version and commit.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is needed to run scripts/build-release.sh: %v", err)
	}
	out := t.TempDir()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cmd := exec.Command("bash", "../../scripts/build-release.sh")
	cmd.Env = append(os.Environ(), "OUT="+out, "VERSION=v9.8.7", "COMMIT="+commit)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build-release.sh: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "switchboard_"+runtime.GOOS+"_"+runtime.GOARCH)
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("release binary has a program interpreter: it is dynamically linked")
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("release binary needs shared libraries %v (%v)", libs, err)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		got, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", bin, args, err, got)
		}
		want := "switchboard 9.8.7 (commit " + commit[:12] + ")"
		if strings.TrimSpace(string(got)) != want {
			t.Errorf("%v printed %q, want %q", args, got, want)
		}
	}
}

// TestNewcomer runs scripts/newcomer.sh: the README's first steps on a
// clean state dir, each checked as a newcomer would notice it.
func TestNewcomer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	args := []string{"../../scripts/newcomer.sh"}
	if bin := os.Getenv("SWITCHBOARD_TEST_BIN"); bin != "" {
		args = append(args, bin)
	}
	out, err := exec.Command("bash", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("newcomer.sh: %v\n%s", err, out)
	}
}
