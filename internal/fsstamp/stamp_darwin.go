//go:build darwin

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
	return stamp{
		dev: uint64(s.Dev), ino: uint64(s.Ino),
		mtimeNs: s.Mtimespec.Nano(), ctimeNs: s.Ctimespec.Nano(),
	}, true
}
