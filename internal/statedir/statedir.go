// Package statedir owns the gateway's claim on its state directory: one
// exclusive lock per state dir, so that two gateways never write one
// database, and the runtime record (pid, address, version) that the lock
// file carries, so that the CLI on the same host finds the running gateway.
//
// The lock is an advisory file lock (flock on Unix, LockFileEx on Windows)
// on <state dir>/gateway.lock, released by the kernel when the process
// exits, kill -9 included: a stale file never blocks a new gateway. It is a
// leaf: it imports only the standard library and x/sys.
package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LockFile is the name of the lock and runtime record inside the state dir.
const LockFile = "gateway.lock"

// maxRecord bounds how much of a lock file is read.
const maxRecord = 64 << 10

// Record says which gateway holds a state dir and where it listens.
type Record struct {
	PID       int       `json:"pid"`
	URL       string    `json:"url,omitempty"`   // ws://host:port of the first listener
	Addrs     []string  `json:"addrs,omitempty"` // every listener, host:port
	Version   string    `json:"version,omitempty"`
	StartedAt time.Time `json:"startedAt"`
}

// ErrLocked is returned (wrapped in a *LockedError) when another process
// holds the state dir.
var ErrLocked = errors.New("state dir is in use by another gateway")

// LockedError names the gateway that holds the state dir.
type LockedError struct {
	Dir    string
	Holder Record // zero when the holder has not written its record yet
}

// Error names the holder and what to do.
func (e *LockedError) Error() string {
	msg := fmt.Sprintf("another switchboard gateway is already running on state dir %s", e.Dir)
	if e.Holder.PID > 0 {
		msg += fmt.Sprintf(" (pid %d", e.Holder.PID)
		if e.Holder.URL != "" {
			msg += ", listening on " + e.Holder.URL
		}
		msg += ")"
	}
	return msg + "; stop it first, or use another SWITCHBOARD_STATE_DIR"
}

// Unwrap makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a held claim on a state dir. Release it with Close.
type Lock struct {
	dir string
	f   *os.File

	mu     sync.Mutex // guards closed
	closed bool
}

// Acquire takes the state dir's lock without waiting. When another process
// holds it, the error is a *LockedError naming that process.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("statedir: lock: %w", err)
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("statedir: lock %s: %w", path, err)
	}
	if !ok {
		rec, _ := readRecord(f)
		f.Close()
		return nil, &LockedError{Dir: dir, Holder: rec}
	}
	l := &Lock{dir: dir, f: f}
	// Until the listeners are up, the record names the process only.
	if err := l.Write(Record{PID: os.Getpid(), StartedAt: time.Now().UTC()}); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Write replaces the runtime record in the lock file.
func (l *Lock) Write(r Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("statedir: record: %w", err)
	}
	b = append(b, '\n')
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("statedir: record: %w", err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("statedir: record: %w", err)
	}
	return nil
}

// Close empties the record and releases the lock. A second call returns
// net.ErrClosed.
func (l *Lock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	l.closed = true
	// An empty file says "nobody listens here" even to a reader that does
	// not test the lock.
	terr := l.f.Truncate(0)
	uerr := unlock(l.f)
	cerr := l.f.Close()
	return errors.Join(terr, uerr, cerr)
}

// Running reports the gateway that holds dir's lock right now. ok is false
// when no process holds it (no gateway, or one that died: its record is
// stale and ignored).
func Running(dir string) (rec Record, ok bool, err error) {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("statedir: %w", err)
	}
	defer f.Close()
	free, err := tryLockShared(f)
	if err != nil {
		return Record{}, false, fmt.Errorf("statedir: %w", err)
	}
	if free {
		unlock(f)
		return Record{}, false, nil
	}
	rec, err = readRecord(f)
	if err != nil {
		return Record{}, true, err
	}
	return rec, true, nil
}

func readRecord(f *os.File) (Record, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxRecord))
	if err != nil {
		return Record{}, fmt.Errorf("statedir: read record: %w", err)
	}
	var r Record
	if len(b) == 0 {
		return r, nil
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("statedir: read record: %w", err)
	}
	return r, nil
}

// ProbeWritable checks that dir takes a new file: it creates, writes and
// removes a small temporary file.
func ProbeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.Write([]byte("x"))
	return errors.Join(werr, f.Close(), os.Remove(name))
}
