//go:build !linux && !darwin

package fsstamp

import (
	"io/fs"
	"os"
)

// stampOf gives no stamp here: without a change time a directory's
// stamp could miss a change, so every path is stat'ed.
func stampOf(fs.FileInfo) (stamp, bool) { return stamp{}, false }

// statDir is dirStamp without StatFunc: its error, as no stamp is given.
func statDir(path string) (stamp, bool, error) {
	_, err := os.Stat(path)
	return stamp{}, false, err
}
