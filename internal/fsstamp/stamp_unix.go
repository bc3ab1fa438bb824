//go:build linux || darwin

package fsstamp

import (
	"io/fs"
	"syscall"
)

// stampOf returns fi's stamp; ok is false when the platform gives none.
func stampOf(fi fs.FileInfo) (st stamp, ok bool) {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}, false
	}
	return statStamp(s), true
}

// statDir is dirStamp without StatFunc: os.Stat's system call into a
// stat buffer of its own, with os.Stat's error.
func statDir(path string) (st stamp, ok bool, err error) {
	var s syscall.Stat_t
	for {
		if err = syscall.Stat(path, &s); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return stamp{}, false, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if s.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return stamp{}, false, nil
	}
	return statStamp(&s), true, nil
}
