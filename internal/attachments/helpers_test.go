package attachments

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixedID returns an ID generator that always returns id.
func fixedID(id string) func() string { return func() string { return id } }

const testID = "0b4c2a57-8a5e-4a0c-9a3e-6d9c1f2e3a4b"

// enabled are small limits with attachments enabled.
func enabled() Limits {
	return Limits{Enabled: true, MaxTotalBytes: 5 << 20, MaxFiles: 50, MaxFileBytes: 1024}
}

// sandbox is a temporary directory holding a workspace "ws" and a sibling
// "outside" with one file, so escapes from the workspace are visible in a
// snapshot of the whole sandbox.
type sandbox struct {
	base, ws, outside string
}

func newSandbox(t testing.TB) *sandbox {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &sandbox{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{s.ws, s.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.outside, "keep.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.ws, "notes.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// entry is what a snapshot records of one path.
type entry struct {
	mode fs.FileMode
	data string // file content hash or link target
}

// snapshot records every path below root (without following links).
func snapshot(t testing.TB, root string) map[string]entry {
	t.Helper()
	m := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.data, err = os.Readlink(p)
		case info.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(p)
			sum := sha256.Sum256(b)
			e.data = hex.EncodeToString(sum[:])
		}
		m[filepath.ToSlash(rel)] = e
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// diff returns the paths added or changed in after, and those removed.
func diff(before, after map[string]entry) (changed, removed []string) {
	for p, e := range after {
		if b, ok := before[p]; !ok || b != e {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			removed = append(removed, p)
		}
	}
	return changed, removed
}

// checkConfined fails unless every change between before and after is
// the creation of the attachments root directories or of something under
// ws/.switchboard/attachments/<id>/ (only when ok: after a failure the folder
// must be gone), and that nothing was removed.
func checkConfined(t testing.TB, before, after map[string]entry, id string, ok bool) {
	t.Helper()
	changed, removed := diff(before, after)
	if len(removed) > 0 {
		t.Errorf("removed %v", removed)
	}
	dir := "ws/" + RootDir + "/" + id
	for _, p := range changed {
		switch {
		case p == "ws/.switchboard" || p == "ws/"+RootDir:
			if !after[p].mode.IsDir() {
				t.Errorf("%s is %v, want a directory", p, after[p].mode)
			}
		case ok && (p == dir || strings.HasPrefix(p, dir+"/")):
		default:
			t.Errorf("wrote %s (ok=%v)", p, ok)
		}
	}
}
