package early

import (
	"runtime"
	"syscall"
)

// prctl options (linux/prctl.h).
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// maxCmdline bounds what init reads of /proc/self/cmdline; a longer
// command line is left to main's exec.
const maxCmdline = 64 << 10

func init() {
	if _, done := syscall.Getenv(EnvDone); done {
		return // the image an exec started
	}
	if v, _ := syscall.Getenv(Env); v != "" {
		return // main parses it (and refuses a bad one)
	}
	if args, ok := readServeArgs(); ok {
		Exec(args, DefaultNs) // a failure: main's exec tries again and says why
	}
}

// Exec sets the calling thread's timer slack to want nanoseconds and
// executes /proc/self/exe in place with args and the environment, marked
// with EnvDone, if the thread's slack is smaller. It returns nil without
// executing when it is not; on failure, an *ExecError, and the thread has
// its slack back. (The main goroutine is locked to the main thread while
// initialisers run; Exec locks its goroutine too, so that the prctl and
// the exec are on one thread from main.)
func Exec(args []string, want uint64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	had, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 {
		return &ExecError{Op: "PR_GET_TIMERSLACK", Err: errno}
	}
	if uint64(had) >= want {
		return nil
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(want), 0); errno != 0 {
		return &ExecError{Op: "PR_SET_TIMERSLACK", Err: errno}
	}
	// /proc/self/exe is the running image even when its file was replaced
	// or removed since (an upgrade in place).
	err := syscall.Exec("/proc/self/exe", args, append(syscall.Environ(), EnvDone+"=1"))
	// Still here: the exec failed. This thread goes back to the others'
	// slack.
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, had, 0)
	return &ExecError{Op: "exec " + args[0] + " again", Err: err}
}

// readServeArgs reads the process's arguments from /proc/self/cmdline and
// returns them when they run serve.
func readServeArgs() ([]string, bool) {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			if cap(buf) >= maxCmdline {
				return nil, false
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return serveArgs(buf)
}
