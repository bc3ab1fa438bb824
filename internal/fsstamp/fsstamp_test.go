package fsstamp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestViewSeesEveryChange: a path found absent is not stat'ed again while
// its directory is unchanged, and each way of making it appear (or of
// changing a path that exists) shows on the next pass; a directory
// changed within racyWindow of its stat, a dangling symbolic link and an
// existing file are stat'ed on every pass.
func TestViewSeesEveryChange(t *testing.T) {
	write := func(t *testing.T, p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	tests := []struct {
		name  string
		path  string // below the test's root
		lstat bool
		// recent: the Cache's clock reads 1 ms after ws's last change
		// (else an hour ahead: every stamp is trusted).
		recent bool
		setup  func(t *testing.T, root string)
		change func(t *testing.T, root string)
		// warm is the stats of an unchanged second pass; found is
		// whether the third pass, after change, finds the path.
		warm  int
		found bool
	}{
		{name: "created", path: "ws/AGENTS.md", warm: 1, found: true,
			setup:  func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/AGENTS.md"), "x") }},
		{name: "created, lstat", path: "ws/MEMORY.md", lstat: true, warm: 1, found: true,
			setup:  func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/MEMORY.md"), "x") }},
		{name: "renamed in", path: "ws/AGENTS.md", warm: 1, found: true,
			setup: func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/other"), "x") },
			change: func(t *testing.T, root string) {
				must(t, os.Rename(filepath.Join(root, "ws/other"), filepath.Join(root, "ws/AGENTS.md")))
			}},
		{name: "symlink created", path: "ws/AGENTS.md", lstat: true, warm: 1, found: true,
			setup: func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) {
				must(t, os.Symlink("nowhere", filepath.Join(root, "ws/AGENTS.md")))
			}},
		{name: "still absent after a sibling is created", path: "ws/AGENTS.md", warm: 1, found: false,
			setup:  func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/SOUL.md"), "x") }},
		{name: "under missing folders", path: "ws/.agents/skills", warm: 1, found: true,
			setup: func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) {
				must(t, os.MkdirAll(filepath.Join(root, "ws/.agents/skills"), 0o700))
			}},
		{name: "directory replaced", path: "ws/AGENTS.md", warm: 1, found: true,
			setup: func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) {
				write(t, filepath.Join(root, "new/AGENTS.md"), "x")
				must(t, os.Rename(filepath.Join(root, "ws"), filepath.Join(root, "old")))
				must(t, os.Rename(filepath.Join(root, "new"), filepath.Join(root, "ws")))
			}},
		{name: "modification time put back", path: "ws/AGENTS.md", warm: 1, found: true,
			setup: func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) {
				ws := filepath.Join(root, "ws")
				fi, err := os.Stat(ws)
				must(t, err)
				write(t, filepath.Join(ws, "AGENTS.md"), "x")
				must(t, os.Chtimes(ws, fi.ModTime(), fi.ModTime())) // the change time still moves
			}},
		{name: "dangling symlink's target created", path: "ws/AGENTS.md", warm: 3, // the path, its folder, the link
			found: true,
			setup: func(t *testing.T, root string) {
				must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700))
				must(t, os.Symlink(filepath.Join(root, "target"), filepath.Join(root, "ws/AGENTS.md")))
			},
			change: func(t *testing.T, root string) { write(t, filepath.Join(root, "target"), "x") }},
		{name: "changed too recently to trust", path: "ws/AGENTS.md", recent: true, warm: 2, found: true,
			setup:  func(t *testing.T, root string) { must(t, os.Mkdir(filepath.Join(root, "ws"), 0o700)) },
			change: func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/AGENTS.md"), "x") }},
		{name: "existing file removed", path: "ws/AGENTS.md", warm: 1, found: false,
			setup:  func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/AGENTS.md"), "x") },
			change: func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, "ws/AGENTS.md"))) }},
		{name: "existing file edited in place", path: "ws/AGENTS.md", warm: 1, found: true,
			setup:  func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/AGENTS.md"), "x") },
			change: func(t *testing.T, root string) { write(t, filepath.Join(root, "ws/AGENTS.md"), "longer") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(t, root)
			stats := 0
			c := &Cache{
				StatFunc:  func(p string) (fs.FileInfo, error) { stats++; return os.Stat(p) },
				LstatFunc: func(p string) (fs.FileInfo, error) { stats++; return os.Lstat(p) },
				NowFunc:   later,
			}
			if tt.recent {
				c.NowFunc = func() time.Time {
					fi, err := os.Stat(filepath.Join(root, "ws"))
					if err != nil {
						t.Error(err)
						return time.Now()
					}
					return fi.ModTime().Add(time.Millisecond)
				}
			}
			path := filepath.Join(root, tt.path)
			pass := func() (fs.FileInfo, error) {
				v := c.View()
				if tt.lstat {
					return v.Lstat(path)
				}
				return v.Stat(path)
			}
			want, wantErr := os.Stat(path)
			if tt.lstat {
				want, wantErr = os.Lstat(path)
			}
			for i := range 2 {
				stats = 0
				fi, err := pass()
				if (err == nil) != (wantErr == nil) || (err != nil && !errors.Is(err, fs.ErrNotExist) && wantErr != nil) {
					t.Fatalf("pass %d: %v, want %v", i+1, err, wantErr)
				}
				if fi != nil && want != nil && !os.SameFile(fi, want) {
					t.Fatalf("pass %d: another file", i+1)
				}
			}
			if stats != tt.warm {
				t.Errorf("unchanged pass: %d stats, want %d", stats, tt.warm)
			}
			tt.change(t, root)
			fi, err := pass()
			if found := err == nil; found != tt.found {
				t.Fatalf("after the change: found %v (%v), want %v", found, err, tt.found)
			}
			if tt.found && tt.name == "existing file edited in place" && fi.Size() != int64(len("longer")) {
				t.Fatalf("after the edit: size %d, a stale stat", fi.Size())
			}
		})
	}
}

// TestViewStatsEachDirectoryOnce: the paths a pass finds known absent
// under one directory cost one stat of it together.
func TestViewStatsEachDirectoryOnce(t *testing.T) {
	root := t.TempDir()
	names := []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "skills", ".agents/skills"}
	stats := 0
	c := &Cache{
		StatFunc:  func(p string) (fs.FileInfo, error) { stats++; return os.Stat(p) },
		LstatFunc: func(p string) (fs.FileInfo, error) { stats++; return os.Lstat(p) },
		NowFunc:   func() time.Time { return time.Now().Add(time.Hour) },
	}
	for i := range 3 {
		stats = 0
		v := c.View()
		for _, n := range names {
			if _, err := v.Stat(filepath.Join(root, n)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("pass %d: %s: %v, want not exist", i+1, n, err)
			}
		}
		if i > 0 && stats != 1 {
			t.Fatalf("pass %d: %d stats, want 1", i+1, stats)
		}
	}
}

// TestTrusted: a directory stamp is trusted once it is older than the
// window for its file system's resolution at the time of the stat: 100 ms
// when both times have a fraction of a second, else 2 s.
func TestTrusted(t *testing.T) {
	at := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	ns := func(d time.Duration) int64 { return at.Add(d).UnixNano() }
	tests := []struct {
		name         string
		mtime, ctime int64
		want         bool
	}{
		{"fine, 50 ms old", ns(-50*time.Millisecond - 7), ns(-50*time.Millisecond - 7), false},
		{"fine, 150 ms old", ns(-150*time.Millisecond - 7), ns(-150*time.Millisecond - 7), true},
		{"fine mtime, fine ctime 50 ms old", ns(-time.Hour - 7), ns(-50*time.Millisecond - 7), false},
		{"whole seconds, 1 s old", ns(-time.Second), ns(-time.Second), false},
		{"whole seconds, 3 s old", ns(-3 * time.Second), ns(-3 * time.Second), true},
		{"whole-second mtime, fine ctime, 1.5 s old", ns(-2 * time.Second), ns(-1500*time.Millisecond - 7), false},
		{"whole-second mtime, fine ctime, 2.5 s old", ns(-3 * time.Second), ns(-2500*time.Millisecond - 7), true},
		{"in the future", ns(time.Hour + 7), ns(time.Hour + 7), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := dirStat{st: stamp{mtimeNs: tt.mtime, ctimeNs: tt.ctime}, ok: true, at: at}
			if got := trusted(d); got != tt.want {
				t.Errorf("trusted = %v, want %v", got, tt.want)
			}
		})
	}
}
