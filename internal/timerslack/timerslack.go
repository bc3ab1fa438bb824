// Package timerslack runs the gateway daemon with a coarser timer slack
// than the one it inherits: 500 µs instead of Linux's default 50 µs.
//
// The timer slack is how late the kernel may fire a thread's timed sleeps
// so that it can batch their wake-ups. It matters to the gateway because
// of one thread it cannot reach: the Go runtime's monitor (sysmon). While
// any goroutine runs, that thread wakes every 20 µs plus the slack to
// look for processors stuck in system calls; between a warm chat turn's
// requests every processor idles, the monitor parks, and the next
// request's first system call wakes it again. So each turn paid four such
// polls, each a timer interrupt and two context switches, which on a
// virtual machine took 11–12% of the gateway's CPU (docs/benchmarks.md,
// nineteenth and twentieth rounds). With a 500 µs slack it polls about
// once a turn, and a processor held by a long system call goes to other
// work at most that late. No runtime setting changes the monitor's period
// (golang/go#18236).
//
// A thread's slack can only be set by the thread itself (or with
// CAP_SYS_NICE), and a new thread takes its creator's, so the monitor has
// the slack the process started with. Reexec therefore sets the slack on
// the thread it runs on and executes the binary again in place (the same
// process, arguments and environment): every thread of the new image,
// the monitor first, starts with it. The processes the gateway starts
// (the exec tool's commands, MCP servers) inherit it too; half a
// millisecond is far below anything they time.
//
// SWITCHBOARD_TIMER_SLACK sets another slack (a Go duration; "0" leaves
// the inherited one). The binary's main calls Reexec first for the serve
// command, before anything else; nothing else in the module imports this
// package. With the variable unset, the exec has usually happened before
// main, in the initialiser of package early, which runs before most of the
// binary's packages initialise (their work is then done once, not twice);
// Reexec then finds the slack set and does nothing.
package timerslack

import (
	"fmt"
	"os"
	"time"

	"github.com/switchboardhq/switchboard/internal/timerslack/early"
)

// Env names the variable that overrides Default.
const Env = early.Env

// Default is the slack the daemon runs with when Env is unset.
const Default = early.DefaultNs * time.Nanosecond

// envDone marks the image an exec for the slack started (Reexec's or
// package early's), so that it does not exec again (a kernel that does
// not keep the slack across exec would otherwise loop). Reexec, first in
// main, removes it from the new image's environment.
const envDone = early.EnvDone

// Wanted returns the slack the environment asks for: Default when Env is
// unset or empty, 0 when it is "0" (keep the inherited slack).
func Wanted(getenv func(string) string) (time.Duration, error) {
	v := getenv(Env)
	if v == "" {
		return Default, nil
	}
	d, err := time.ParseDuration(v) // "0" parses too
	if err != nil || d < 0 || d > time.Second {
		return 0, fmt.Errorf("%s=%q: want a duration from 0 to 1s, such as 500us", Env, v)
	}
	return d, nil
}

// Reexec executes the running binary again with the slack want, if the
// process runs with a smaller one. It returns nil without executing when
// want is 0, when the slack is already set (in the image it started,
// among others), or where timer slack does not exist (every system but
// Linux). It returns an error when the exec failed: the process then
// goes on with the slack it had.
func Reexec(want time.Duration) error {
	if os.Getenv(envDone) != "" {
		os.Unsetenv(envDone)
		return nil
	}
	if want <= 0 {
		return nil
	}
	return reexec(want)
}
