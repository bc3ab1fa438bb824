//go:build unix

package gateway

import "golang.org/x/sys/unix"

// diskSpace returns the total and available bytes of the file system
// holding path; ok is false when it cannot be read.
func diskSpace(path string) (total, avail int64, ok bool) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return 0, 0, false
	}
	bs := uint64(st.Bsize)
	return int64(uint64(st.Blocks) * bs), int64(uint64(st.Bavail) * bs), true
}
