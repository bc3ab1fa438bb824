//go:build linux

package prompt

import (
	"errors"
	"os"
	"syscall"
)

// watchMask is every change to a watched file, or to the entries of a
// watched directory, that can change what a bootstrap file reads: not
// reads, opens or closes after reading.
const watchMask = syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE | syscall.IN_CREATE |
	syscall.IN_DELETE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO

// changeWatch is one non-blocking inotify instance. It reports only that
// something it watches changed since the last look, and is polled with
// one read that finds nothing on a quiet turn. The kernel queues an
// event before the write that caused it returns, so a change made before
// a turn begins is seen by that turn.
type changeWatch struct {
	f *os.File // closed when the watch is collected
}

// newChangeWatch returns a watch, or nil when inotify is not available
// (no instance left): the cache then stats every file on every turn.
func newChangeWatch() *changeWatch {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &changeWatch{f: os.NewFile(uintptr(fd), "inotify")}
}

// add watches path (a directory's entries, or a file's content and
// links) and returns its watch descriptor.
func (w *changeWatch) add(path string) (int, bool) {
	wd := -1
	err := w.control(func(fd int) (err error) {
		wd, err = syscall.InotifyAddWatch(fd, path, watchMask)
		return err
	})
	return wd, err == nil
}

// changed drains the queued events and reports whether there were any;
// a failed read counts as a change.
func (w *changeWatch) changed() bool {
	var buf [4096]byte
	any := false
	err := w.control(func(fd int) error {
		for {
			n, err := syscall.Read(fd, buf[:])
			switch {
			case errors.Is(err, syscall.EAGAIN):
				return nil
			case err != nil:
				return err
			case n <= 0:
				return nil
			}
			any = true
		}
	})
	return any || err != nil
}

// control runs fn with the descriptor (os.File.Fd would make it
// blocking).
func (w *changeWatch) control(fn func(fd int) error) error {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
