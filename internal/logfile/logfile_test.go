package logfile

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestWriterRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "logs", "switchboard.log")
	w, err := Open(path, Options{MaxBytes: 100, Archives: 2})
	if err != nil {
		t.Fatal(err)
	}
	line := func(i int) []byte { return fmt.Appendf(nil, "%038d\n", i) } // 39 bytes
	for i := range 10 {
		if _, err := w.Write(line(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(line(0)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close = %v", err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// 2 lines per file (78 bytes; a third would pass 100): 8,9 active;
	// 6,7 in .1; 4,5 in .2; older removed.
	if got, want := read(path), string(line(8))+string(line(9)); got != want {
		t.Errorf("active = %q, want %q", got, want)
	}
	if got, want := read(ArchivePath(path, 1)), string(line(6))+string(line(7)); got != want {
		t.Errorf(".1 = %q", got)
	}
	if got, want := read(ArchivePath(path, 2)), string(line(4))+string(line(5)); got != want {
		t.Errorf(".2 = %q", got)
	}
	if _, err := os.Stat(ArchivePath(path, 3)); !os.IsNotExist(err) {
		t.Errorf(".3 exists: %v", err)
	}
	for _, p := range []string{path, ArchivePath(path, 1)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, %v", p, fi.Mode(), err)
		}
	}
	// Reopening appends.
	w, err = Open(path, Options{MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(line(10))
	w.Close()
	if got := read(path); !strings.HasSuffix(got, string(line(10))) || !strings.HasPrefix(got, string(line(8))) {
		t.Errorf("after reopen: %q", got)
	}
}

func TestWriterConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	w, err := Open(path, Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				w.Write(fmt.Appendf(nil, "g%d-%d\n", g, i))
			}
		})
	}
	wg.Wait()
	w.Close()
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
}

func ptr(v int64) *int64 { return &v }

func TestTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.log")
	if err := os.WriteFile(path, []byte("aaaa\nbbbb\ncccc\ndd"), 0o600); err != nil {
		t.Fatal(err)
	}
	const size = 17
	for _, tc := range []struct {
		name      string
		p         TailParams
		lines     []string
		cursor    int64
		truncated bool
		reset     bool
		skipped   *int64
	}{
		{"end of file", TailParams{}, []string{"aaaa", "bbbb", "cccc"}, 15, false, false, nil},
		{"limit keeps newest", TailParams{Limit: 2}, []string{"bbbb", "cccc"}, 15, true, false, nil},
		{"maxBytes drops partial first line", TailParams{MaxBytes: 9}, []string{"cccc"}, 15, true, false, nil},
		{"maxBytes at a boundary", TailParams{MaxBytes: 12}, []string{"bbbb", "cccc"}, 15, true, false, nil},
		{"from cursor", TailParams{Cursor: ptr(5)}, []string{"bbbb", "cccc"}, 15, false, false, nil},
		{"cursor at last line end: partial line waits", TailParams{Cursor: ptr(15)}, nil, 15, false, false, nil},
		{"cursor past size resets", TailParams{Cursor: ptr(100)}, []string{"aaaa", "bbbb", "cccc"}, 15, false, true, nil},
		{"cursor too far behind skips", TailParams{Cursor: ptr(0), MaxBytes: 7}, []string{"cccc"}, 15, true, true, ptr(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Tail(path, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Lines, tc.lines) && !(len(got.Lines) == 0 && len(tc.lines) == 0) {
				t.Errorf("lines = %q, want %q", got.Lines, tc.lines)
			}
			if got.Cursor != tc.cursor || got.Size != size || got.Truncated != tc.truncated || got.Reset != tc.reset {
				t.Errorf("got %+v", got)
			}
			if (got.SkippedBytes == nil) != (tc.skipped == nil) || (tc.skipped != nil && *got.SkippedBytes != *tc.skipped) {
				t.Errorf("skipped = %v, want %v", got.SkippedBytes, tc.skipped)
			}
			if got.Lines == nil {
				t.Error("Lines is nil; logs.tail sends [] ")
			}
		})
	}
	// A missing file reads as empty; a cursor into it says reset.
	got, err := Tail(filepath.Join(dir, "none.log"), TailParams{Cursor: ptr(10)})
	if err != nil || !got.Reset || got.Size != 0 || len(got.Lines) != 0 {
		t.Errorf("missing file: %+v %v", got, err)
	}
	if _, err := Tail(dir, TailParams{}); err == nil {
		t.Error("a directory was tailed")
	}
}

// Following: successive calls from the returned cursor see every line once.
func TestTailFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.log")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var seen []string
	var cur *int64
	for i := range 50 {
		fmt.Fprintf(w, "line %d\n", i)
		if i%7 == 0 {
			r, err := Tail(path, TailParams{Cursor: cur})
			if err != nil {
				t.Fatal(err)
			}
			if cur == nil {
				seen = nil // the first call reads the whole (small) file
			}
			seen = append(seen, r.Lines...)
			cur = ptr(r.Cursor)
		}
	}
	r, _ := Tail(path, TailParams{Cursor: cur})
	seen = append(seen, r.Lines...)
	if len(seen) != 50 || seen[0] != "line 0" || seen[49] != "line 49" {
		t.Fatalf("followed %d lines: %q", len(seen), seen)
	}
}

func FuzzTail(f *testing.F) {
	f.Add([]byte("a\nb\nc"), int64(0), 0, 0, true)
	f.Add([]byte("\n\n\n"), int64(2), 1, 1, false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, cursor int64, limit, maxBytes int, useCursor bool) {
		path := filepath.Join(dir, "fuzz.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p := TailParams{Limit: limit % 10000, MaxBytes: maxBytes % 2_000_000}
		if useCursor {
			p.Cursor = &cursor
		}
		r, err := Tail(path, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Cursor < 0 || r.Cursor > int64(len(data)) {
			t.Fatalf("cursor %d outside 0..%d", r.Cursor, len(data))
		}
		// After whole lines, the cursor is at the next line's start.
		if len(r.Lines) > 0 && r.Cursor > 0 && data[r.Cursor-1] != '\n' {
			t.Fatalf("cursor %d is not at a line start", r.Cursor)
		}
		for _, l := range r.Lines {
			if strings.Contains(l, "\n") {
				t.Fatalf("line with newline %q", l)
			}
		}
		if len(r.Lines) > MaxTailLimit {
			t.Fatalf("%d lines", len(r.Lines))
		}
	})
}
