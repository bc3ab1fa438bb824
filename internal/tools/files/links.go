package files

import (
	"fmt"
	"io/fs"
)

// RefuseHardLinks returns the refusal of a file that has more than one
// hard link, nil otherwise. Another link to the same file may lie outside
// the workspace (`ln ~/.switchboard/switchboard.json5 notes.txt`), so no
// tool reads or changes such a file; verb names what was refused ("read",
// "write") and name the file as the caller gave it. fi must describe the
// opened file, not the path, so that a link swapped in after the check
// does not count.
func RefuseHardLinks(verb, name string, fi fs.FileInfo) error {
	if n := linkCount(fi); n > 1 {
		return fmt.Errorf("refusing to %s %s: it has %d hard links, and another one may be outside the workspace", verb, name, n)
	}
	return nil
}
