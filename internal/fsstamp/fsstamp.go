// Package fsstamp lets code that stats the same paths on every turn skip
// the stats of paths it found absent: a missing path stays missing while
// the nearest directory above it that exists shows the same stamp (device,
// inode, and the modification and change times in nanoseconds), since
// creating, renaming or removing an entry changes its directory's. A path
// that exists is stat'ed every time (an edit in place does not change its
// directory). A directory stamp too recent at the time of its stat is not
// trusted: file systems stamp with a coarse clock, and a second change in
// the same tick would leave the stamp as it was (git's "racy clean"
// entries).
//
// It is a leaf: the standard library only, and any package may import it.
package fsstamp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// How much older than the time of its stat a directory's modification and
// change times must be for its stamp to be trusted. Times in whole seconds
// come from a file system that keeps no fractions (FAT stamps in steps of
// 2 s, ext4 with small inodes of 1 s): racyWindow. Times with a fraction
// come from one that keeps them, in ticks of 10 ms or less (Linux stamps
// with its coarse clock, a jiffy behind the time at most; exFAT in 10 ms;
// NTFS in 100 ns): fineRacyWindow. The short window matters: the
// readiness probe adds and removes a file in the state dir every 2 s, so
// the state dir (the parent of the managed skills folder) would never be
// trusted under racyWindow.
const (
	racyWindow     = 2 * time.Second
	fineRacyWindow = 100 * time.Millisecond
)

// maxAbsent bounds the paths a Cache remembers; past it they are
// forgotten and found again.
const maxAbsent = 1024

// Cache remembers paths found absent, each with the stamp of the nearest
// directory above it that existed then. The zero value is ready to use
// and stats through the os package; a Cache is safe for concurrent use.
type Cache struct {
	// StatFunc and LstatFunc replace os.Stat and os.Lstat, and NowFunc
	// time.Now, in tests; set them before the first use.
	StatFunc, LstatFunc func(string) (fs.FileInfo, error)
	NowFunc             func() time.Time

	mu     sync.Mutex // guards absent
	absent map[string]absence
}

// absence is a path known absent while dir's stamp is st; err is the
// error that showed it, given again (errors are not changed by callers).
type absence struct {
	dir string
	st  stamp
	err error
}

// stamp is what shows a directory's entries unchanged.
type stamp struct {
	dev, ino         uint64
	mtimeNs, ctimeNs int64
}

// View is one pass over a set of paths (a turn's): each directory the
// Cache's records depend on is stat'ed at most once in it. A View is not
// safe for concurrent use, nor to be copied once used; take one per pass.
type View struct {
	c     *Cache
	dirs  []dirStat
	small [2]dirStat // dirs' first backing array: a pass sees one or two
}

// dirStat is a stat of a directory taken in a View, and the time just
// before it.
type dirStat struct {
	path string
	st   stamp
	ok   bool // st is valid: the path is a directory with a stamp
	err  error
	at   time.Time
}

// View starts a pass.
func (c *Cache) View() View { return View{c: c} }

// Stat is os.Stat, except that a path known absent is not stat'ed.
func (v *View) Stat(path string) (fs.FileInfo, error) { return v.stat(path, true) }

// Lstat is os.Lstat, except that a path known absent is not stat'ed.
func (v *View) Lstat(path string) (fs.FileInfo, error) { return v.stat(path, false) }

func (v *View) stat(path string, follow bool) (fs.FileInfo, error) {
	op := "lstat"
	if follow {
		op = "stat"
	}
	if err := v.knownAbsent(path, op); err != nil {
		return nil, err
	}
	var fi fs.FileInfo
	var err error
	if follow {
		fi, err = v.c.osStat(path)
	} else {
		fi, err = v.c.osLstat(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		v.learn(path, err)
	}
	return fi, err
}

// knownAbsent returns the error for path when it was found absent and the
// directory that showed it still has the same stamp, else nil.
func (v *View) knownAbsent(path, op string) error {
	c := v.c
	c.mu.Lock()
	a, ok := c.absent[path]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	if d := v.dir(a.dir); d.ok && d.st == a.st {
		if pe, ok := a.err.(*fs.PathError); ok && pe.Op == op {
			return a.err
		}
		return &fs.PathError{Op: op, Path: path, Err: fs.ErrNotExist}
	}
	c.mu.Lock()
	if cur, ok := c.absent[path]; ok && cur.dir == a.dir && cur.st == a.st {
		delete(c.absent, path)
	}
	c.mu.Unlock()
	return nil
}

// learn records path, just found absent, against the nearest directory
// above it that exists, when that directory's stamp can be trusted: its
// stamp is taken first, and then the entry under it on the way to path is
// checked to be absent (not merely a dangling symbolic link), so a change
// between the two shows as a new stamp.
func (v *View) learn(path string, err error) {
	child := filepath.Clean(path)
	for {
		parent := filepath.Dir(child)
		if parent == child {
			return
		}
		d := v.dir(parent)
		if errors.Is(d.err, fs.ErrNotExist) {
			child = parent
			continue
		}
		if !d.ok || !trusted(d) {
			return
		}
		if _, err := v.c.osLstat(child); !errors.Is(err, fs.ErrNotExist) {
			return
		}
		c := v.c
		c.mu.Lock()
		if c.absent == nil || len(c.absent) >= maxAbsent {
			c.absent = make(map[string]absence)
		}
		c.absent[path] = absence{dir: parent, st: d.st, err: err}
		c.mu.Unlock()
		return
	}
}

// trusted reports whether d's stamp is old enough at the time of its stat
// (a stamp in the future is not).
func trusted(d dirStat) bool {
	w := racyWindow
	if d.st.mtimeNs%1e9 != 0 && d.st.ctimeNs%1e9 != 0 {
		w = fineRacyWindow
	}
	limit := d.at.Add(-w).UnixNano()
	return d.st.mtimeNs < limit && d.st.ctimeNs < limit
}

// dir returns the View's stat of the directory path, taking it on first
// use.
func (v *View) dir(path string) dirStat {
	for _, d := range v.dirs {
		if d.path == path {
			return d
		}
	}
	d := dirStat{path: path, at: v.c.now()}
	d.st, d.ok, d.err = v.c.dirStamp(path)
	if v.dirs == nil {
		v.dirs = v.small[:0]
	}
	v.dirs = append(v.dirs, d)
	return d
}

// dirStamp is os.Stat's error for path, and the stamp of path when it is a
// directory and the platform gives one (ok). Without StatFunc it is taken
// without os.Stat's FileInfo (statDir), two allocations a stat fewer.
func (c *Cache) dirStamp(path string) (st stamp, ok bool, err error) {
	if c.StatFunc == nil {
		return statDir(path)
	}
	fi, err := c.StatFunc(path)
	if err != nil || !fi.IsDir() {
		return stamp{}, false, err
	}
	st, ok = stampOf(fi)
	return st, ok, nil
}

func (c *Cache) osStat(path string) (fs.FileInfo, error) {
	if c.StatFunc != nil {
		return c.StatFunc(path)
	}
	return os.Stat(path)
}

func (c *Cache) osLstat(path string) (fs.FileInfo, error) {
	if c.LstatFunc != nil {
		return c.LstatFunc(path)
	}
	return os.Lstat(path)
}

func (c *Cache) now() time.Time {
	if c.NowFunc != nil {
		return c.NowFunc()
	}
	return time.Now()
}
