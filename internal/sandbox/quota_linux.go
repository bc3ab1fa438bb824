//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// quotaWatchMask is what the watcher follows in each directory of the
// tree.
const quotaWatchMask = syscall.IN_CREATE | syscall.IN_MODIFY | syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_TO |
	syscall.IN_MOVED_FROM | syscall.IN_DELETE | syscall.IN_ATTRIB | syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW

// quotaWatch follows one command's writes in a private workspace.
type quotaWatch struct {
	dir   string
	quota int64
	f     *os.File      // the inotify instance, non-blocking
	quit  chan struct{} // closed by stop
	done  chan struct{} // closed when run returns

	startOnce, stopOnce sync.Once
	started             bool
	// Owned by the run goroutine once started.
	wds   map[int]string // watch descriptor → directory
	sizes map[string]int64
	used  int64
	// reason is set before done closes when the watch killed the command.
	reason string
}

// newQuotaWatch watches dir's tree and measures it; it fails when dir is
// over quota already or cannot be watched.
func newQuotaWatch(dir string, quota int64) (*quotaWatch, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: scope workspace: %w", err)
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: cannot watch the sandbox workspace quota (inotify: %w); each running command in a private workspace takes an inotify instance: raise fs.inotify.max_user_instances", err)
	}
	w := &quotaWatch{dir: dir, quota: quota, f: os.NewFile(uintptr(fd), "inotify"),
		quit: make(chan struct{}), done: make(chan struct{})}
	if err := w.rescan(); err != nil {
		w.f.Close()
		return nil, err
	}
	if w.used > quota {
		w.f.Close()
		return nil, overQuota(dir, w.used, quota)
	}
	return w, nil
}

// rescan walks the whole tree again, replacing the accounting; watches
// of directories gone from the tree are removed.
func (w *quotaWatch) rescan() error {
	wds, sizes := map[int]string{}, map[string]int64{}
	var used int64
	if err := w.walk(w.dir, wds, sizes, &used); err != nil {
		return err
	}
	for wd := range w.wds {
		if _, ok := wds[wd]; !ok {
			_ = w.control(func(fd int) error { _, err := syscall.InotifyRmWatch(fd, uint32(wd)); return err })
		}
	}
	w.wds, w.sizes, w.used = wds, sizes, used
	return nil
}

// walk adds root's tree to the accounting: a watch on every directory
// (added before its entries are read, so that no write between the two
// is missed) and the size of every regular file.
func (w *quotaWatch) walk(root string, wds map[int]string, sizes map[string]int64, used *int64) error {
	var watchErr error
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile
		}
		if d.IsDir() {
			var wd int
			err := w.control(func(fd int) (err error) { wd, err = syscall.InotifyAddWatch(fd, p, quotaWatchMask); return err })
			switch {
			case err == nil:
				wds[wd] = p
			case p == w.dir || !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR):
				watchErr = fmt.Errorf("sandbox: cannot watch the sandbox workspace quota (inotify on %s: %w); raise fs.inotify.max_user_watches", p, err)
				return filepath.SkipAll
			}
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			*used += fi.Size() - sizes[p]
			sizes[p] = fi.Size()
		}
		return nil
	})
	return watchErr
}

// control runs fn with the inotify descriptor, which stays open meanwhile
// (os.File.Fd would make it blocking, and a blocked read would outlive
// stop).
func (w *quotaWatch) control(fn func(fd int) error) error {
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

// start runs the watch until stop, calling kill once if the workspace
// goes over its quota.
func (w *quotaWatch) start(kill func()) {
	w.startOnce.Do(func() {
		w.started = true
		go w.run(kill)
	})
}

// stop ends the watch and returns why it killed the command, if it did.
func (w *quotaWatch) stop() string {
	w.stopOnce.Do(func() {
		w.startOnce.Do(func() {}) // a watch stopped before it started never starts
		close(w.quit)
		w.f.Close() // ends the run goroutine's read
		if w.started {
			<-w.done
		}
	})
	return w.reason
}

func (w *quotaWatch) run(kill func()) {
	defer close(w.done)
	stopWith := func(reason string) {
		select {
		case <-w.quit: // the command ended meanwhile: nothing to stop
		default:
			w.reason = reason
			kill()
		}
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed by stop
		}
		err = w.apply(buf[:n])
		if err == nil && w.used > w.quota {
			// The files' sizes say over: a walk of the whole tree confirms
			// it (and corrects the accounting should an event be lost).
			err = w.rescan()
		}
		switch {
		case err != nil:
			stopWith("Command stopped: " + err.Error() + "; the sandbox workspace quota could not be kept.")
			return
		case w.used > w.quota:
			stopWith(fmt.Sprintf("Command stopped: the sandbox workspace %s went over its quota of %d bytes (it held %d bytes when the command was stopped). "+
				"The command and the processes it started were killed; remove files from the workspace before running more commands.", w.dir, w.quota, w.used))
			return
		}
	}
}

// apply takes a batch of inotify events into the accounting: the files
// named are measured again; a new directory is watched and measured; a
// directory moved away, or a lost event, makes the tree walked again.
func (w *quotaWatch) apply(b []byte) error {
	dirty := map[string]struct{}{}
	rescan := false
	for len(b) >= syscall.SizeofInotifyEvent {
		wd := int(int32(binary.NativeEndian.Uint32(b[0:])))
		mask := binary.NativeEndian.Uint32(b[4:])
		end := syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
		if end > len(b) {
			break
		}
		name := strings.TrimRight(string(b[syscall.SizeofInotifyEvent:end]), "\x00")
		b = b[end:]
		switch {
		case mask&syscall.IN_Q_OVERFLOW != 0:
			rescan = true
			continue
		case mask&syscall.IN_IGNORED != 0:
			delete(w.wds, wd)
			continue
		}
		dir, ok := w.wds[wd]
		if !ok || name == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if mask&syscall.IN_ISDIR == 0 {
			dirty[p] = struct{}{}
			continue
		}
		switch {
		case mask&syscall.IN_MOVED_FROM != 0:
			rescan = true
		case mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0:
			if err := w.walk(p, w.wds, w.sizes, &w.used); err != nil {
				return err
			}
		}
	}
	if rescan {
		return w.rescan()
	}
	for p := range dirty {
		w.used -= w.sizes[p]
		delete(w.sizes, p)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			w.sizes[p] = fi.Size()
			w.used += fi.Size()
		}
	}
	return nil
}

// killFirstInCgroup returns kill preceded, for a bubblewrap command pid
// with a pids cgroup of its own (see joinPidsScript), by SIGKILL to every
// process in that cgroup: the writer stops at once instead of after the
// sandbox's PID namespace is torn down behind bwrap.
func killFirstInCgroup(pid int, kill func()) func() {
	dir, _ := procBound()
	if pid <= 0 || dir == "" {
		return kill
	}
	procs := filepath.Join(dir, strconv.Itoa(pid), "cgroup.procs")
	return func() {
		if b, err := os.ReadFile(procs); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if p, err := strconv.Atoi(f); err == nil && p > 0 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		kill()
	}
}
