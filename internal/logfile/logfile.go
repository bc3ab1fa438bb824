// Package logfile owns the gateway's log file: a size-rotated file writer
// (the active file plus numbered archives beside it), the gateway's logger
// that writes it beside the console (secret-looking attributes redacted),
// and the bounded tail reader behind the logs.tail gateway method, with
// the reference's cursor semantics. It is a leaf: standard library only.
package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Defaults, as the reference's logging.maxFileBytes and archive count.
const (
	DefaultMaxBytes = 100 << 20
	DefaultArchives = 5
)

// Writer appends to a log file and rotates it when the next write would
// pass MaxBytes: name.log becomes name.1.log, name.1.log becomes
// name.2.log, and so on up to Archives; the oldest is removed. Files are
// created 0600. Safe for concurrent use.
type Writer struct {
	path     string
	maxBytes int64
	archives int

	mu     sync.Mutex // guards the fields below
	f      *os.File
	size   int64
	closed bool
}

// Options configures Open. Zero values mean the defaults.
type Options struct {
	MaxBytes int64 // rotate before the active file passes this size
	Archives int   // numbered archives kept beside the active file
}

// Open opens (creating it and its directory if needed) the log file at path
// for appending.
func Open(path string, opts Options) (*Writer, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Archives <= 0 {
		opts.Archives = DefaultArchives
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("logfile: %w", err)
	}
	w := &Writer{path: path, maxBytes: opts.MaxBytes, archives: opts.Archives}
	if err := w.openLocked(); err != nil {
		return nil, err
	}
	return w, nil
}

// Path is the active file's path.
func (w *Writer) Path() string { return w.path }

func (w *Writer) openLocked() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("logfile: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("logfile: %w", err)
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// Write appends p (one or more whole log lines) to the active file,
// rotating first when p would take the file past MaxBytes.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, net.ErrClosed
	}
	if w.size > 0 && w.size+int64(len(p)) > w.maxBytes {
		if err := w.rotateLocked(); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

// ArchivePath is the path of archive n (1 is the newest): "x.log" gives
// "x.1.log".
func ArchivePath(path string, n int) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + strconv.Itoa(n) + ext
}

func (w *Writer) rotateLocked() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("logfile: rotate: %w", err)
	}
	err := os.Remove(ArchivePath(w.path, w.archives))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("logfile: rotate: %w", err)
	}
	for n := w.archives - 1; n >= 1; n-- {
		err := os.Rename(ArchivePath(w.path, n), ArchivePath(w.path, n+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("logfile: rotate: %w", err)
		}
	}
	if err := os.Rename(w.path, ArchivePath(w.path, 1)); err != nil {
		return fmt.Errorf("logfile: rotate: %w", err)
	}
	return w.openLocked()
}

// Close closes the active file. A second call returns net.ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return net.ErrClosed
	}
	w.closed = true
	return w.f.Close()
}
