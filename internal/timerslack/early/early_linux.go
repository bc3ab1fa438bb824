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
	args, ok := readServeArgs()
	if !ok {
		return
	}
	// The main goroutine is locked to the main thread while initialisers
	// run; the lock here says so and keeps the prctl and the exec on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	had, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 || had >= DefaultNs {
		return
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, DefaultNs, 0); errno != 0 {
		return
	}
	syscall.Exec("/proc/self/exe", args, append(syscall.Environ(), EnvDone+"=1"))
	// Still here: the exec failed. main's exec tries again and says why.
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, had, 0)
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
