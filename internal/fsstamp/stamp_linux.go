//go:build linux

package fsstamp

import "syscall"

// statStamp is the stamp in a stat buffer (the time fields' names are
// the platform's).
func statStamp(s *syscall.Stat_t) stamp {
	return stamp{
		dev: uint64(s.Dev), ino: uint64(s.Ino),
		mtimeNs: s.Mtim.Nano(), ctimeNs: s.Ctim.Nano(),
	}
}
