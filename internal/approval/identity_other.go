//go:build !linux

package approval

import (
	"fmt"
	"os"
)

// fileIdentity names a version of a file by its size and modification
// time.
func fileIdentity(fi os.FileInfo) string {
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
}
