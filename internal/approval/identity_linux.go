package approval

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity names a version of a file: its size and modification time,
// and on Linux its device, inode and change time (which a writer cannot
// set back), so that a replaced or rewritten executable is hashed again.
func fileIdentity(fi os.FileInfo) string {
	id := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id += fmt.Sprintf("/%d/%d/%d", st.Dev, st.Ino, st.Ctim.Nano())
	}
	return id
}
