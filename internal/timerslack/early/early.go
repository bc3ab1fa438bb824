// Package early executes "switchboard serve" again with the default timer
// slack (package timerslack) from its initialiser, before the packages
// that come after it in the binary's start run theirs.
//
// The exec makes the process start twice: the runtime and every package
// initialiser that ran before it run again in the new image. From main,
// that was all of them, 3–7 ms on a two-core virtual machine (half of a
// cold start there). The runtime initialises a package as soon as its
// imports are, the smallest import path first among those ready; this
// package imports only syscall and runtime, so it comes before every
// package that does real work at start (SQLite's, the HTML parser's, the
// JSON Schema tables, gob's), as the 16th or so of about 150.
//
// It takes only the common path: serve, SWITCHBOARD_TIMER_SLACK unset or
// empty, a slack below the default, /proc mounted. Anything else (another
// value, an exec that fails) it leaves to timerslack.Reexec in main,
// which parses the variable, reports errors and executes late through
// the same Exec. The image it starts has EnvDone in its environment;
// main's Reexec removes it.
//
// Only package timerslack imports it, for the names and the exec they
// share; through that import, main's, the initialiser is in the binary.
package early

// Env names the variable that overrides the default slack.
const Env = "SWITCHBOARD_TIMER_SLACK"

// EnvDone marks the image that an exec for the slack started, so that it
// does not exec again (a kernel that does not keep the slack across exec
// would otherwise loop).
const EnvDone = "SWITCHBOARD_TIMER_SLACK_SET"

// DefaultNs is the slack serve runs with when Env is unset, in
// nanoseconds: 500 µs.
const DefaultNs = 500_000

// ExecError is Exec's failure: the step that failed and its error.
type ExecError struct {
	Op  string // PR_GET_TIMERSLACK, PR_SET_TIMERSLACK or "exec <argv[0]> again"
	Err error
}

// Error is the step and its error.
func (e *ExecError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the step's error.
func (e *ExecError) Unwrap() error { return e.Err }

// serveArgs reports whether the NUL-separated argument list cmdline (as
// /proc/self/cmdline holds it) runs the serve command, and returns the
// arguments. The root command has no flags of its own, so serve is the
// first argument or none.
func serveArgs(cmdline []byte) ([]string, bool) {
	var args []string
	start := 0
	for i, c := range cmdline {
		if c == 0 {
			args = append(args, string(cmdline[start:i]))
			start = i + 1
		}
	}
	if start < len(cmdline) { // a last argument without its NUL
		args = append(args, string(cmdline[start:]))
	}
	if len(args) < 2 || args[1] != "serve" {
		return nil, false
	}
	return args, true
}
