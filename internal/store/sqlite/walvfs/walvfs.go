// Package walvfs registers a SQLite VFS that writes a transaction's WAL
// frames with one system call (per 64 KiB) instead of two a frame.
//
// SQLite writes a WAL frame as two pwrite calls, its 24-byte header and its
// page, so a commit of n pages costs 2n system calls. On a virtual machine,
// where a system call costs microseconds, that is most of a small commit's
// time. The VFS registered here is the default unix VFS with one change: the
// WAL file's appends are gathered in a buffer and written with one pwrite
// when the transaction's commit frame is complete. Everything else (the
// database file, the WAL index and its locks, syncs, checkpoints) is the unix
// VFS's own code, so the files on disk and the locking are exactly SQLite's,
// and other processes (the sqlite3 shell, Litestream, a second connection on
// the plain VFS) read and write the database alongside.
//
// What a commit promises does not change. COMMIT returns only after every
// frame of the transaction, the commit frame last, has been handed to the
// kernel, as with the unix VFS, and before the WAL index makes it visible to
// readers: a write error fails the commit, not a later one. Frames of a
// transaction that spills pages before its commit wait in the buffer and are
// written before anything reads the WAL through this connection, before a
// sync, and when the buffer fills; if the transaction is rolled back, those
// still waiting are dropped when it ends.
//
// Only the sqlite store imports this package.
package walvfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Name is the name the VFS is registered under: a DSN's vfs parameter.
const Name = "switchboard-wal"

// bufSize is each writing WAL file's buffer: 62 frames of the store's
// 1 KiB pages (15 of 4 KiB), a warm chat turn's commit being about 9. A
// transaction of more pages is written in several calls. (The unix VFS
// writes at most 128 KiB in one call: it masks each write's length to 17
// bits.)
const bufSize = 64 << 10

const (
	walHeaderSize   = 32 // the WAL file's header, written at offset 0
	frameHeaderSize = 24 // each frame's header; bytes 4-7 are nonzero in a commit frame
)

var (
	regOnce sync.Once
	regErr  error
	// unixVFS is the default VFS this one delegates to; ours is the copy
	// registered as Name, whose files are unixVFS's followed by
	// methodsField.
	unixVFS uintptr
	ours    sqlite3.Tsqlite3_vfs
	// methodsField is the offset, in an open file of ours, of the unix
	// methods it was opened with.
	methodsField uintptr

	tablesMu sync.Mutex
	// tables maps a kind of file and a unix methods table to the copy
	// such a file of ours uses (see methodsTable). The copies live in C
	// memory for the process's lifetime.
	tables map[[2]uintptr]uintptr

	filesMu sync.RWMutex
	// files holds each open WAL file's buffer, by its sqlite3_file. Both
	// maps are made by register, not at process start.
	files map[uintptr]*walFile

	// writes counts the pwrite calls made to WAL files (Writes).
	writes atomic.Int64
)

// Register registers the VFS once per process; every call returns the
// first's error.
func Register() error {
	regOnce.Do(func() { regErr = register() })
	return regErr
}

func register() error {
	tables = map[[2]uintptr]uintptr{}
	files = map[uintptr]*walFile{}
	tls := libc.NewTLS() // kept: the registration lasts as long as the process
	unixVFS = sqlite3.Xsqlite3_vfs_find(tls, 0)
	if unixVFS == 0 {
		return errors.New("walvfs: SQLite has no default VFS")
	}
	ours = *(*sqlite3.Tsqlite3_vfs)(ptr(unixVFS))
	methodsField = (uintptr(ours.FszOsFile) + 7) &^ 7
	ours.FszOsFile = int32(methodsField + unsafe.Sizeof(uintptr(0)))
	ours.FpNext = 0
	name, err := libc.CString(Name)
	if err != nil {
		return fmt.Errorf("walvfs: %w", err)
	}
	ours.FzName = name
	ours.FxOpen = funcPointer(xOpen)
	if rc := sqlite3.Xsqlite3_vfs_register(tls, uintptr(unsafe.Pointer(&ours)), 0); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("walvfs: registering the VFS: SQLite error %d", rc)
	}
	return nil
}

// Writes returns how many pwrite calls WAL files opened through the VFS
// have made, in the whole process: a change shows that some writer wrote
// frames (the store's checkpointer starts its timer on it; tests count
// writes a commit).
func Writes() int64 { return writes.Load() }

// walFile is an open WAL file's write buffer. SQLite calls a file's methods
// from one connection at a time; mu keeps the race detector's view honest
// and costs nothing uncontended.
type walFile struct {
	// tls is the connection's, which SQLite passes to every call the
	// connection makes: its database file's too.
	tls *libc.TLS

	mu sync.Mutex
	// buf is C memory of bufSize bytes, allocated at the first write.
	buf uintptr
	// off is the file offset of buf's first byte; n the bytes held.
	off int64
	n   int
	// end is where the next frame is appended: the end of the furthest
	// write since the WAL was last started at offset 0.
	end int64
	// armed is set by a commit frame's header (see wrote).
	armed bool
}

// xOpen opens a file with the unix VFS and, for a WAL file, swaps its
// methods for the gathering ones.
func xOpen(tls *libc.TLS, _ uintptr, zName, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	unix := (*sqlite3.Tsqlite3_vfs)(ptr(unixVFS))
	rc := (*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{unix.FxOpen})))(tls, unixVFS, zName, pFile, flags, pOutFlags)
	file := (*sqlite3.Tsqlite3_file)(ptr(pFile))
	if rc != sqlite3.SQLITE_OK || file.FpMethods == 0 {
		return rc
	}
	var kind int
	switch {
	case flags&sqlite3.SQLITE_OPEN_WAL != 0:
		kind = walKind
	case flags&sqlite3.SQLITE_OPEN_MAIN_DB != 0:
		kind = dbKind
	default:
		return rc
	}
	table := methodsTable(tls, kind, file.FpMethods)
	if table == 0 {
		// Out of C memory for the table. A database file left plain
		// would leave its WAL without the rollback's drop: fail the open.
		(*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{(*sqlite3.Tsqlite3_io_methods)(ptr(file.FpMethods)).FxClose})))(tls, pFile)
		file.FpMethods = 0
		return sqlite3.SQLITE_NOMEM
	}
	*(*uintptr)(ptr(pFile + methodsField)) = file.FpMethods
	if kind == walKind {
		filesMu.Lock()
		files[pFile] = &walFile{tls: tls}
		filesMu.Unlock()
	}
	file.FpMethods = table
	return rc
}

// The kinds of file whose methods the VFS replaces.
const (
	walKind = iota // gathers its writes
	dbKind         // a database file: its WAL write lock's release drops what a rolled-back transaction left gathered
)

// methodsTable returns the copy of the unix methods m for a file of kind,
// making it at the first such file opened with m; 0 when C memory runs
// out.
func methodsTable(tls *libc.TLS, kind int, m uintptr) uintptr {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	key := [2]uintptr{uintptr(kind), m}
	if t, ok := tables[key]; ok {
		return t
	}
	t := libc.Xmalloc(tls, libc.Tsize_t(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
	if t == 0 {
		return 0
	}
	table := (*sqlite3.Tsqlite3_io_methods)(ptr(t))
	*table = *(*sqlite3.Tsqlite3_io_methods)(ptr(m))
	switch kind {
	case walKind:
		table.FxClose = funcPointer(walClose)
		table.FxRead = funcPointer(walRead)
		table.FxWrite = funcPointer(walWrite)
		table.FxTruncate = funcPointer(walTruncate)
		table.FxSync = funcPointer(walSync)
		table.FxFileSize = funcPointer(walFileSize)
		table.FxFileControl = funcPointer(walFileControl)
	case dbKind:
		table.FxShmLock = funcPointer(dbShmLock)
	}
	tables[key] = t
	return t
}

// unixMethods returns the unix methods pFile was opened with.
func unixMethods(pFile uintptr) *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(ptr(*(*uintptr)(ptr(pFile + methodsField))))
}

func lookup(pFile uintptr) *walFile {
	filesMu.RLock()
	f := files[pFile]
	filesMu.RUnlock()
	return f
}

// unixWrite writes through the unix VFS.
func unixWrite(tls *libc.TLS, pFile, buf uintptr, n int32, off int64) int32 {
	writes.Add(1)
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&struct{ uintptr }{unixMethods(pFile).FxWrite})))(tls, pFile, buf, n, off)
}

// flushLocked writes out what f holds.
func (f *walFile) flushLocked(tls *libc.TLS, pFile uintptr) int32 {
	if f.n == 0 {
		return sqlite3.SQLITE_OK
	}
	rc := unixWrite(tls, pFile, f.buf, int32(f.n), f.off)
	f.n = 0
	return rc
}

// flush writes out what the WAL file pFile holds.
func flush(tls *libc.TLS, pFile uintptr) int32 {
	f := lookup(pFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flushLocked(tls, pFile)
}

// walWrite gathers a run of adjacent writes (a transaction's frames, the
// log's header before them) and writes the run out when the transaction's
// commit frame is complete (see wrote), when a write does not continue
// the run, and when the buffer is full.
func walWrite(tls *libc.TLS, pFile, pBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	f := lookup(pFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int(iAmt)
	if iOfst == 0 && n == walHeaderSize {
		f.end = 0 // a new log: its frames follow this header
	}
	if f.n > 0 && (iOfst != f.off+int64(f.n) || f.n+n > bufSize) {
		if rc := f.flushLocked(tls, pFile); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if f.buf == 0 && n <= bufSize {
		f.buf = libc.Xmalloc(tls, bufSize) // 0 when out of memory: written through
	}
	if f.buf == 0 || n > bufSize {
		if rc := unixWrite(tls, pFile, pBuf, iAmt, iOfst); rc != sqlite3.SQLITE_OK {
			return rc
		}
		return f.wrote(tls, pFile, pBuf, iAmt, iOfst)
	}
	if f.n == 0 {
		f.off = iOfst
	}
	copy((*libc.RawMem)(ptr(f.buf))[f.n:f.n+n:f.n+n], (*libc.RawMem)(ptr(pBuf))[:n:n])
	f.n += n
	return f.wrote(tls, pFile, pBuf, iAmt, iOfst)
}

// wrote notes a write of iAmt bytes at iOfst, held or written through, and
// writes the buffer out when the file is armed.
//
// A commit frame's header arms the file. Appended at the log's end, it is
// held, and the page that follows goes out with it; from then on every
// write goes out at once, until the header of a frame that does not commit
// is appended at the log's end: the next transaction's first. So whatever
// SQLite writes after a commit's header (the copies of the commit frame it
// pads a sector with, the frame headers whose checksums it rewrites) is in
// the file before the commit is published in the WAL index, and a failed
// write fails the commit. A commit frame's header written below the log's
// end (SQLite rewriting it, or writing where a rolled-back transaction
// wrote further) goes out at once. After a rollback, the file stays armed
// from the next commit on, and writes go out one by one, until a frame is
// appended past the furthest write or the log restarts.
func (f *walFile) wrote(tls *libc.TLS, pFile, pBuf uintptr, iAmt int32, iOfst int64) int32 {
	atEnd := iOfst >= f.end
	if end := iOfst + int64(iAmt); end > f.end {
		f.end = end
	}
	if iAmt == frameHeaderSize { // only frame headers are 24 bytes
		commit := binary.BigEndian.Uint32((*libc.RawMem)(ptr(pBuf))[4:8:8]) != 0
		switch {
		case commit:
			f.armed = true
			if atEnd {
				return sqlite3.SQLITE_OK // its page follows
			}
		case atEnd:
			f.armed = false // a transaction's frame, not its last
		}
	}
	if f.armed {
		return f.flushLocked(tls, pFile)
	}
	return sqlite3.SQLITE_OK
}

func walRead(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&struct{ uintptr }{unixMethods(pFile).FxRead})))(tls, pFile, zBuf, iAmt, iOfst)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size sqlite3.Tsqlite3_int64) int32 {
	f := lookup(pFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	if rc := f.flushLocked(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	if f.end > size {
		f.end = size
	}
	return (*(*func(*libc.TLS, uintptr, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&struct{ uintptr }{unixMethods(pFile).FxTruncate})))(tls, pFile, size)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&struct{ uintptr }{unixMethods(pFile).FxSync})))(tls, pFile, flags)
}

func walFileSize(tls *libc.TLS, pFile, pSize uintptr) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{unixMethods(pFile).FxFileSize})))(tls, pFile, pSize)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{unixMethods(pFile).FxFileControl})))(tls, pFile, op, pArg)
}

// walClose frees the buffer and closes the file.
func walClose(tls *libc.TLS, pFile uintptr) int32 {
	filesMu.Lock()
	f := files[pFile]
	delete(files, pFile)
	filesMu.Unlock()
	f.mu.Lock()
	f.n = 0 // a rolled-back transaction's, if anything (see dbShmLock)
	if f.buf != 0 {
		libc.Xfree(tls, f.buf)
		f.buf = 0
	}
	f.mu.Unlock()
	m := unixMethods(pFile)
	(*sqlite3.Tsqlite3_file)(ptr(pFile)).FpMethods = uintptr(unsafe.Pointer(m))
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{m.FxClose})))(tls, pFile)
}

// SQLite's WAL write lock: the first of the WAL index's locks.
const walWriteLock = 0

// dbShmLock is the unix VFS's lock on the WAL index. When a connection
// releases the WAL write lock, the end of its write transaction, its WAL
// file must hold nothing: a commit has written everything out by then (see
// wrote). A transaction rolled back may have left frames it spilled; with
// the unix VFS they would lie past the log's end, never read. Held back
// and written later, they could land on frames another connection (a
// sqlite3 shell) commits once the lock is free, so they are dropped.
func dbShmLock(tls *libc.TLS, pFile uintptr, ofst, n, flags int32) int32 {
	if ofst == walWriteLock && flags == sqlite3.SQLITE_SHM_UNLOCK|sqlite3.SQLITE_SHM_EXCLUSIVE {
		filesMu.RLock()
		for _, f := range files {
			if f.tls != tls {
				continue
			}
			f.mu.Lock()
			f.n = 0
			f.mu.Unlock()
		}
		filesMu.RUnlock()
	}
	return (*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&struct{ uintptr }{unixMethods(pFile).FxShmLock})))(tls, pFile, ofst, n, flags)
}

// ptr turns a C address into a pointer, as SQLite's translated code does.
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// funcPointer returns what SQLite's translated C code calls as a function
// pointer: a Go func value's code pointer, as the translator makes them.
func funcPointer(f any) uintptr {
	type iface [2]uintptr
	return (*iface)(unsafe.Pointer(&f))[1]
}
