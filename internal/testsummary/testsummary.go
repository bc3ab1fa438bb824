// Package testsummary turns the event stream of `go test -json` into what
// a person watching scripts/test.sh needs: go test's own package lines
// ("ok", "FAIL", build errors) as they come, the output of failed tests, a
// line when each package group starts and when it is done, with the time
// since the start, and a closing summary (packages passed and failed, the
// slowest ten, the total time).
package testsummary

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Result is what a stream held.
type Result struct {
	Passed, Failed, NoTests int
	// FailedPackages are the packages that failed, in the order they did.
	FailedPackages []string
	// Slowest are up to ten packages, slowest first.
	Slowest []PackageTime
}

// PackageTime is how long one package's tests took (go test's figure).
type PackageTime struct {
	Package string
	Elapsed time.Duration
}

// Options configure Summarize.
type Options struct {
	// Module is the module path cut from package names in progress lines
	// (go test's own lines stay as they are).
	Module string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Summarize reads `go test -json` events from r and writes the progress
// and the summary to w. Lines that are not JSON (go's own messages on a
// build failure before any test ran) are copied through.
func Summarize(r io.Reader, w io.Writer, o Options) (Result, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	since := func() string { return shortDuration(now().Sub(start)) }
	short := func(pkg string) string {
		if o.Module != "" {
			if rest, ok := strings.CutPrefix(pkg, o.Module+"/"); ok {
				return rest
			}
		}
		return pkg
	}
	var (
		res       Result
		times     []PackageTime
		testOut   = map[[2]string][]string{} // (package, test) → output while it runs
		groupLeft = map[string]int{}         // group → packages started and not done
		groupFail = map[string]int{}
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		group := packageGroup(short(ev.Package))
		switch {
		case ev.Action == "start":
			if groupLeft[group] == 0 {
				fmt.Fprintf(w, "==> [%s] testing %s\n", since(), group)
			}
			groupLeft[group]++
		case ev.Action == "build-output":
			io.WriteString(w, ev.Output)
		case ev.Test != "" && ev.Action == "output":
			k := [2]string{ev.Package, ev.Test}
			testOut[k] = append(testOut[k], ev.Output)
		case ev.Test != "" && (ev.Action == "pass" || ev.Action == "skip"):
			delete(testOut, [2]string{ev.Package, ev.Test})
		case ev.Test != "" && ev.Action == "fail":
			k := [2]string{ev.Package, ev.Test}
			for _, s := range testOut[k] {
				io.WriteString(w, s)
			}
			delete(testOut, k)
		case ev.Test == "" && ev.Action == "output":
			io.WriteString(w, ev.Output) // go test's own "ok"/"FAIL" lines
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			switch ev.Action {
			case "pass":
				res.Passed++
			case "fail":
				// Tests of the package that never ended (a timeout's panic
				// names them, and its goroutine dump is their output):
				// print what they wrote, or the failure says nothing.
				writeUnended(w, testOut, ev.Package)
				res.Failed++
				res.FailedPackages = append(res.FailedPackages, ev.Package)
				groupFail[group]++
			case "skip":
				res.NoTests++
			}
			times = append(times, PackageTime{ev.Package, time.Duration(ev.Elapsed * float64(time.Second))})
			if groupLeft[group] > 0 {
				groupLeft[group]--
				if groupLeft[group] == 0 {
					status := "done"
					if groupFail[group] > 0 {
						status = fmt.Sprintf("done, %d package(s) FAILED", groupFail[group])
					}
					fmt.Fprintf(w, "==> [%s] %s %s (%d packages finished so far)\n", since(), group, status, res.Passed+res.Failed+res.NoTests)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("testsummary: read: %w", err)
	}
	// A stream cut short (go test killed) leaves tests that never ended.
	pkgs := map[string]bool{}
	for k := range testOut {
		pkgs[k[0]] = true
	}
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		writeUnended(w, testOut, pkg)
	}
	slices.SortStableFunc(times, func(a, b PackageTime) int { return int(b.Elapsed - a.Elapsed) })
	res.Slowest = times[:min(10, len(times))]
	writeSummary(w, res, now().Sub(start))
	return res, nil
}

func writeSummary(w io.Writer, res Result, total time.Duration) {
	fmt.Fprintf(w, "==> summary: %d packages passed, %d failed, %d without tests; total time %s\n",
		res.Passed, res.Failed, res.NoTests, shortDuration(total))
	for _, p := range res.FailedPackages {
		fmt.Fprintf(w, "    FAILED  %s\n", p)
	}
	if len(res.Slowest) > 0 {
		fmt.Fprintln(w, "    slowest packages:")
		for _, p := range res.Slowest {
			fmt.Fprintf(w, "    %8s  %s\n", shortDuration(p.Elapsed), p.Package)
		}
	}
}

// packageGroup is the part of a package path that groups it on the
// progress lines: the first two elements ("internal/channel" for
// internal/channel/irc/irctest), or the whole path when shorter.
func packageGroup(pkg string) string {
	parts := strings.SplitN(pkg, "/", 3)
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, "/")
}

// shortDuration is d rounded for a person: 950ms, 12.3s, 4m05s.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
}

// writeUnended writes the output of pkg's tests that started and never
// passed, failed or skipped, each under a line naming it, and forgets them.
func writeUnended(w io.Writer, testOut map[[2]string][]string, pkg string) {
	var names []string
	for k := range testOut {
		if k[0] == pkg {
			names = append(names, k[1])
		}
	}
	slices.Sort(names)
	for _, name := range names {
		k := [2]string{pkg, name}
		fmt.Fprintf(w, "--- DID NOT END: %s (%s)\n", name, pkg)
		for _, s := range testOut[k] {
			io.WriteString(w, s)
		}
		delete(testOut, k)
	}
}
