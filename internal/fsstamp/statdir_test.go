package fsstamp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestStatDirMatchesStat: a directory's stamp taken without os.Stat's
// FileInfo is the one stampOf gives of os.Stat's, a file or a missing
// path gives none, with os.Stat's error, and a symbolic link is followed;
// the stat allocates at most its path's bytes.
func TestStatDirMatchesStat(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{dir, file, filepath.Join(dir, "missing"), filepath.Join(file, "under")}
	if link := filepath.Join(dir, "l"); os.Symlink(dir, link) == nil { // where the platform lets us
		paths = append(paths, link)
	}
	for _, p := range paths {
		st, ok, err := statDir(p)
		fi, werr := os.Stat(p)
		var want stamp
		wantOK := false
		if werr == nil && fi.IsDir() {
			want, wantOK = stampOf(fi)
		}
		if st != want || ok != wantOK || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Errorf("statDir(%s) = %+v, %v, %v; os.Stat gives %+v, %v, %v", p, st, ok, err, want, wantOK, werr)
		}
		if werr != nil && !errors.Is(err, fs.ErrNotExist) && errors.Is(werr, fs.ErrNotExist) {
			t.Errorf("statDir(%s): %v is no fs.ErrNotExist", p, err)
		}
	}
	if n := testing.AllocsPerRun(50, func() { _, _, _ = statDir(dir) }); n > 1 {
		t.Errorf("statDir: %v allocations, want at most 1 (os.Stat's were 2 or 3)", n)
	}
}
