package main

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// initWorkAllowed lists this module's packages that still do work at
// process start (package-level vars that are not constants or static
// composite literals, init funcs). Each such package's initialiser touches
// its own code pages before main runs, and those pages stay resident. The
// list may only shrink: a new package-level value is built on first use
// (a func with a sync.Once beside a statically initialised var), a switch
// or a static table instead of a map literal, a const instead of a
// formatted string.
var initWorkAllowed = map[string]bool{
	"internal/stackstart":       true, // grows the main goroutine's stack before deep initialisers do
	"internal/timerslack/early": true, // executes serve again for its timer slack before the costly initialisers run
}

// TestNoNewInitWork runs this test binary (which links every package the
// command links) with GODEBUG=inittrace=1 and fails for any package of
// this module, not in initWorkAllowed, that runs an initialiser, and for
// any package in initWorkAllowed that no longer does (a stale entry, to be
// removed so that the package cannot take up init work again).
func TestNoNewInitWork(t *testing.T) {
	if os.Getenv("SWITCHBOARD_INITTRACE_CHILD") != "" {
		return
	}
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation gives every package an initialiser")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoNewInitWork$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "SWITCHBOARD_INITTRACE_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	const module = "github.com/switchboardhq/switchboard/"
	seen := 0
	initialised := make(map[string]bool)
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init <package> @0.5 ms, 0.01 ms clock, 64 bytes, 2 allocs
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		seen++
		pkg, ok := strings.CutPrefix(f[1], module)
		if !ok || strings.HasSuffix(pkg, ".test") || pkg == "cmd/switchboard" {
			continue
		}
		initialised[pkg] = true
		if !initWorkAllowed[pkg] {
			t.Errorf("package %s does work at process start (%s); build its package-level values on first use or as static data (see initWorkAllowed)", pkg, sc.Text())
		}
	}
	if seen == 0 {
		t.Fatalf("no inittrace lines from the child; stderr:\n%s", stderr.String())
	}
	for _, pkg := range slices.Sorted(maps.Keys(initWorkAllowed)) {
		if !initialised[pkg] {
			t.Errorf("package %s no longer does work at process start: remove it from initWorkAllowed", pkg)
		}
	}
}
