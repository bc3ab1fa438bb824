package attachments

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Every rejection of docs/spec/reference-behaviour.md §9.5, with its exact status and message;
// none of them writes anything.
func TestMaterializeRejects(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	lim := func(f func(*Limits)) Limits {
		l := enabled()
		if f != nil {
			f(&l)
		}
		return l
	}
	one := func(name, content, enc string) []File {
		return []File{{Name: name, Content: content, Encoding: enc}}
	}
	invalidBase64 := &Error{Status: "error", Message: "attachments_invalid_base64_or_too_large"}
	tests := []struct {
		name  string
		files []File
		lim   Limits
		want  *Error
	}{
		{"disabled", one("a.txt", "x", ""), Limits{},
			&Error{"forbidden", "attachments are disabled for sessions_spawn (enable tools.sessions_spawn.attachments.enabled)"}},
		{"disabled beats count", make([]File, 99), Limits{MaxFiles: 1},
			&Error{"forbidden", "attachments are disabled for sessions_spawn (enable tools.sessions_spawn.attachments.enabled)"}},
		{"too many files", []File{{Name: "a"}, {Name: "b"}, {Name: "c"}}, lim(func(l *Limits) { l.MaxFiles = 2 }),
			&Error{"error", "attachments_file_count_exceeded (maxFiles=2)"}},
		{"count checked before names", []File{{}, {}, {}}, lim(func(l *Limits) { l.MaxFiles = 2 }),
			&Error{"error", "attachments_file_count_exceeded (maxFiles=2)"}},
		{"default max files", make([]File, 51), Limits{Enabled: true},
			&Error{"error", "attachments_file_count_exceeded (maxFiles=50)"}},

		{"empty name", one("", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (empty)"}},
		{"blank name", one(" \t\u00a0\ufeff ", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (empty)"}},
		{"slash", one("a/b", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a/b)"}},
		{"leading slash", one("/etc", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (/etc)"}},
		{"backslash", one(`a\b`, "x", ""), enabled(), &Error{"error", `attachments_invalid_name (a\b)`}},
		{"nul", one("a\x00b", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a\x00b)"}},
		{"newline", one("a\nb", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a\nb)"}},
		{"carriage return", one("a\rb", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a\rb)"}},
		{"tab", one("a\tb", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a\tb)"}},
		{"unit separator", one("a\x1fb", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a\x1fb)"}},
		{"delete", one("a\x7fb", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a\x7fb)"}},
		{"dot", one(".", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (.)"}},
		{"dot dot", one(" .. ", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (..)"}},
		{"manifest", one(".manifest.json", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (.manifest.json)"}},
		{"manifest trimmed", one("\n.manifest.json ", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (.manifest.json)"}},
		{"invalid utf-8", one("a\xffb", "x", ""), enabled(), &Error{"error", "attachments_invalid_name (a\xffb)"}},
		{"duplicate", []File{{Name: "a.txt"}, {Name: " a.txt "}}, enabled(), &Error{"error", "attachments_duplicate_name (a.txt)"}},
		{"name checked before duplicate", []File{{Name: "a"}, {Name: "a/"}}, enabled(), &Error{"error", "attachments_invalid_name (a/)"}},
		{"later file invalid", []File{{Name: "ok.txt", Content: "fine"}, {Name: "..", Content: "x"}}, enabled(),
			&Error{"error", "attachments_invalid_name (..)"}},

		{"base64 empty", one("f", "", "base64"), enabled(), invalidBase64},
		{"base64 whitespace only", one("f", " \n\t ", "base64"), enabled(), invalidBase64},
		{"base64 bad length", one("f", "abc", "base64"), enabled(), invalidBase64},
		{"base64 bad characters", one("f", "!@#$", "base64"), enabled(), invalidBase64},
		{"base64 url alphabet", one("f", "ab-_", "base64"), enabled(), invalidBase64},
		{"base64 three pads", one("f", "A===", "base64"), enabled(), invalidBase64},
		{"base64 inner pad", one("f", "AA=A", "base64"), enabled(), invalidBase64},
		{"base64 only pads", one("f", "====", "base64"), enabled(), invalidBase64},
		{"base64 NEL is not whitespace", one("f", "aGVs\u0085bG8=", "base64"), enabled(), invalidBase64},
		{"base64 raw too long", one("f", strings.Repeat("A", 2737), "base64"), enabled(), invalidBase64},
		{"base64 raw too long with spaces", one("f", "AAAA"+strings.Repeat(" ", 2733), "base64"), enabled(), invalidBase64},
		{"base64 encoding too long", one("f", strings.Repeat("A", 1372), "base64"), enabled(), invalidBase64},
		{"base64 decoded too large", one("f", b64(1025), "base64"), enabled(), invalidBase64},
		{"base64 trimmed encoding", one("f", "!!!!", " base64\n"), enabled(), invalidBase64},

		{"utf8 too large", one("a.txt", "hello", ""), lim(func(l *Limits) { l.MaxFileBytes = 4 }),
			&Error{"error", "attachments_file_bytes_exceeded (name=a.txt bytes=5 maxFileBytes=4)"}},
		{"utf8 counts bytes", one(" é.txt ", "ééé", "utf8"), lim(func(l *Limits) { l.MaxFileBytes = 5 }),
			&Error{"error", "attachments_file_bytes_exceeded (name=é.txt bytes=6 maxFileBytes=5)"}},
		{"other encodings are utf8", one("a", "aGVsbG8=", "BASE64"), lim(func(l *Limits) { l.MaxFileBytes = 7 }),
			&Error{"error", "attachments_file_bytes_exceeded (name=a bytes=8 maxFileBytes=7)"}},
		{"total too large", []File{{Name: "a", Content: "12345"}, {Name: "b", Content: "aGVsbG8=", Encoding: "base64"}},
			lim(func(l *Limits) { l.MaxTotalBytes = 9 }),
			&Error{"error", "attachments_total_bytes_exceeded (totalBytes=10 maxTotalBytes=9)"}},
		{"total checked per file", []File{{Name: "a", Content: "12345"}, {Name: "b", Content: "12345"}, {Name: "/"}},
			lim(func(l *Limits) { l.MaxTotalBytes = 9 }),
			&Error{"error", "attachments_total_bytes_exceeded (totalBytes=10 maxTotalBytes=9)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			before := snapshot(t, s.base)
			r, dir, err := Materialize(s.ws, tt.files, tt.lim, fixedID(testID))
			if r != nil || dir != "" {
				t.Errorf("got receipt %+v, dir %q", r, dir)
			}
			got, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("err = %v, want *Error", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if status, msg := Report(err); status != tt.want.Status || msg != tt.want.Message {
				t.Errorf("Report = %q, %q", status, msg)
			}
			if changed, removed := diff(before, snapshot(t, s.base)); len(changed)+len(removed) > 0 {
				t.Errorf("a rejection changed the file system: %v %v", changed, removed)
			}
		})
	}
}

func TestMaterializeEmpty(t *testing.T) {
	s := newSandbox(t)
	before := snapshot(t, s.base)
	for _, files := range [][]File{nil, {}} {
		r, dir, err := Materialize(s.ws, files, Limits{}, nil)
		if r != nil || dir != "" || err != nil {
			t.Errorf("Materialize(%v) = %v, %q, %v; want nothing", files, r, dir, err)
		}
	}
	if changed, _ := diff(before, snapshot(t, s.base)); len(changed) > 0 {
		t.Errorf("wrote %v", changed)
	}
}

func TestMaterialize(t *testing.T) {
	s := newSandbox(t)
	files := []File{
		{Name: " report.md ", Content: "# Report\n<b>&</b>\n", MimeType: "text/markdown"},
		{Name: "logo.bin", Content: " aGVs\nbG8=\u00a0", Encoding: " base64 "},
		{Name: "pad.bin", Content: "AB==", Encoding: "base64"}, // non-zero padding bits are ignored
		{Name: "empty.txt"},
		{Name: "é ü.txt", Content: "ünïcode"},
	}
	before := snapshot(t, s.base)
	r, dir, err := Materialize(s.ws, files, enabled(), fixedID(testID))
	if err != nil {
		t.Fatal(err)
	}
	relDir := ".switchboard/attachments/" + testID
	want := &Receipt{
		Count:      5,
		TotalBytes: 18 + 5 + 1 + 0 + 9,
		Files: []ReceiptFile{
			{Name: "report.md", Bytes: 18, Sha256: sha("# Report\n<b>&</b>\n")},
			{Name: "logo.bin", Bytes: 5, Sha256: sha("hello")},
			{Name: "pad.bin", Bytes: 1, Sha256: sha("\x00")},
			{Name: "empty.txt", Bytes: 0, Sha256: sha("")},
			{Name: "é ü.txt", Bytes: 9, Sha256: sha("ünïcode")},
		},
		RelDir: relDir,
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	if wantDir := filepath.Join(s.ws, filepath.FromSlash(relDir)); dir != wantDir {
		t.Errorf("dir = %q, want %q", dir, wantDir)
	}
	checkConfined(t, before, snapshot(t, s.base), testID, true)

	contents := map[string]string{
		"report.md": "# Report\n<b>&</b>\n", "logo.bin": "hello", "pad.bin": "\x00", "empty.txt": "", "é ü.txt": "ünïcode",
		".manifest.json": `{
  "relDir": "` + relDir + `",
  "count": 5,
  "totalBytes": 33,
  "files": [
    {
      "name": "report.md",
      "bytes": 18,
      "sha256": "` + sha("# Report\n<b>&</b>\n") + `"
    },
    {
      "name": "logo.bin",
      "bytes": 5,
      "sha256": "` + sha("hello") + `"
    },
    {
      "name": "pad.bin",
      "bytes": 1,
      "sha256": "` + sha("\x00") + `"
    },
    {
      "name": "empty.txt",
      "bytes": 0,
      "sha256": "` + sha("") + `"
    },
    {
      "name": "é ü.txt",
      "bytes": 9,
      "sha256": "` + sha("ünïcode") + `"
    }
  ]
}
`,
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(contents) {
		t.Errorf("folder holds %d entries, want %d", len(ents), len(contents))
	}
	for name, want := range contents {
		p := filepath.Join(dir, name)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if fi, _ := os.Lstat(p); fi.Mode() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, fi.Mode())
		}
	}
	for _, d := range []string{".switchboard", RootDir, relDir} {
		fi, err := os.Lstat(filepath.Join(s.ws, filepath.FromSlash(d)))
		if err != nil || fi.Mode() != os.ModeDir|0o700 {
			t.Errorf("%s: %v, %v; want a 0700 directory", d, fi.Mode(), err)
		}
	}
}

// Non-positive limits mean the defaults: 1 MiB per file, 5 MiB in total.
func TestMaterializeDefaultLimits(t *testing.T) {
	s := newSandbox(t)
	mib := strings.Repeat("x", 1<<20)
	files := []File{{Name: "a", Content: mib}, {Name: "b", Content: base64.StdEncoding.EncodeToString([]byte(mib)), Encoding: "base64"}}
	r, _, err := Materialize(s.ws, files, Limits{Enabled: true, MaxFiles: -1, MaxFileBytes: -5}, fixedID("a"))
	if err != nil || r.TotalBytes != 2<<20 {
		t.Fatalf("Materialize = %+v, %v", r, err)
	}
	files = []File{{Name: "a", Content: mib + "x"}}
	_, _, err = Materialize(s.ws, files, Limits{Enabled: true}, fixedID("b"))
	if _, msg := Report(err); msg != "attachments_file_bytes_exceeded (name=a bytes=1048577 maxFileBytes=1048576)" {
		t.Errorf("err = %v", err)
	}
	files = nil
	for i := range 6 {
		files = append(files, File{Name: string(rune('a' + i)), Content: mib})
	}
	_, _, err = Materialize(s.ws, files, Limits{Enabled: true}, fixedID("c"))
	if _, msg := Report(err); msg != "attachments_total_bytes_exceeded (totalBytes=6291456 maxTotalBytes=5242880)" {
		t.Errorf("err = %v", err)
	}
}

// The raw-length pre-check counts UTF-16 code units, so whitespace up to
// twice the largest encoding is accepted.
func TestBase64Boundaries(t *testing.T) {
	const max = 1024 // largest encoding 1368, raw limit 2736
	tests := []struct {
		content string
		want    string // decoded; "!" for rejected
	}{
		{"aGVsbG8=", "hello"},
		{"aGVsbA==", "hell"},
		{"aGVs", "hel"},
		{"aG Vs\r\nbG\t8=\v\f", "hello"},
		{"aGVs\u2028bG8=\u3000\ufeff", "hello"},
		{"AAAA" + strings.Repeat(" ", 2732), "\x00\x00\x00"},
		{"AAAA" + strings.Repeat(" ", 2733), "!"},
		{"AAAA" + strings.Repeat("\u3000", 2732), "\x00\x00\x00"}, // 3 bytes each, 1 UTF-16 unit
		{"AAAA" + strings.Repeat("\u3000", 2733), "!"},
		{strings.Repeat("A", 1368), "!"}, // decodes 1026 > 1024
		{strings.Repeat("A", 1364) + "AA==", strings.Repeat("\x00", 1024)},
		{strings.Repeat("A", 1364) + "AAA=", "!"}, // 1025 bytes
		{strings.Repeat("A", 1372), "!"},
	}
	for _, tt := range tests {
		got, ok := decodeStrictBase64(tt.content, max)
		if !ok {
			got = []byte("!")
		}
		if string(got) != tt.want {
			t.Errorf("decodeStrictBase64(%.40q…) = %.20q, want %.20q", tt.content, got, tt.want)
		}
	}
}

func TestMaterializeBadID(t *testing.T) {
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a b", strings.Repeat("a", 129), "a\x00"} {
		s := newSandbox(t)
		before := snapshot(t, s.base)
		_, _, err := Materialize(s.ws, []File{{Name: "a"}}, enabled(), fixedID(id))
		if err == nil {
			t.Errorf("id %q: no error", id)
		}
		if changed, _ := diff(before, snapshot(t, s.base)); len(changed) > 0 {
			t.Errorf("id %q: wrote %v", id, changed)
		}
	}
}

// An existing folder is never reused or touched.
func TestMaterializeExistingFolder(t *testing.T) {
	s := newSandbox(t)
	if _, _, err := Materialize(s.ws, []File{{Name: "a", Content: "first"}}, enabled(), fixedID(testID)); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s.base)
	_, _, err := Materialize(s.ws, []File{{Name: "a", Content: "second"}}, enabled(), fixedID(testID))
	if err == nil {
		t.Fatal("no error")
	}
	if status, _ := Report(err); status != "error" {
		t.Errorf("status = %q", status)
	}
	if changed, removed := diff(before, snapshot(t, s.base)); len(changed)+len(removed) > 0 {
		t.Errorf("changed %v, removed %v", changed, removed)
	}
}

// A failure while writing (here: a name the file system refuses) removes
// the folder again.
func TestMaterializeWriteFailureCleansUp(t *testing.T) {
	s := newSandbox(t)
	before := snapshot(t, s.base)
	files := []File{{Name: "ok.txt", Content: "x"}, {Name: strings.Repeat("n", 300), Content: "y"}}
	_, _, err := Materialize(s.ws, files, enabled(), fixedID(testID))
	if err == nil {
		t.Fatal("no error")
	}
	if _, ok := errors.AsType[*Error](err); ok {
		t.Errorf("err = %v, want a file-system error", err)
	}
	checkConfined(t, before, snapshot(t, s.base), testID, false)
}

func TestMaterializeCreatesWorkspace(t *testing.T) {
	s := newSandbox(t)
	ws := filepath.Join(s.base, "new", "ws")
	_, dir, err := Materialize(ws, []File{{Name: "a"}}, enabled(), fixedID(testID))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(ws, ".switchboard", "attachments", testID); dir != want {
		t.Errorf("dir = %q, want %q", dir, want)
	}
	if _, _, err := Materialize("", []File{{Name: "a"}}, enabled(), nil); err == nil {
		t.Error("empty workspace: no error")
	}
}

func TestMaterializeSymlinks(t *testing.T) {
	t.Run("workspace is a link", func(t *testing.T) {
		s := newSandbox(t)
		link := filepath.Join(s.base, "link")
		if err := os.Symlink(s.ws, link); err != nil {
			t.Fatal(err)
		}
		_, dir, err := Materialize(link, []File{{Name: "a"}}, enabled(), fixedID(testID))
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(s.ws, ".switchboard", "attachments", testID); dir != want {
			t.Errorf("dir = %q, want the real path %q", dir, want)
		}
	})
	escapes := []struct {
		name  string
		setup func(s *sandbox) error
	}{
		{".switchboard to outside", func(s *sandbox) error {
			return os.Symlink(s.outside, filepath.Join(s.ws, ".switchboard"))
		}},
		{".switchboard relative to outside", func(s *sandbox) error {
			return os.Symlink("../outside", filepath.Join(s.ws, ".switchboard"))
		}},
		{"attachments to outside", func(s *sandbox) error {
			if err := os.Mkdir(filepath.Join(s.ws, ".switchboard"), 0o700); err != nil {
				return err
			}
			return os.Symlink("../../outside", filepath.Join(s.ws, ".switchboard", "attachments"))
		}},
		{"attachments to the file system root", func(s *sandbox) error {
			if err := os.Mkdir(filepath.Join(s.ws, ".switchboard"), 0o700); err != nil {
				return err
			}
			return os.Symlink("/", filepath.Join(s.ws, ".switchboard", "attachments"))
		}},
		{"dangling link to outside", func(s *sandbox) error {
			return os.Symlink(filepath.Join(s.outside, "new"), filepath.Join(s.ws, ".switchboard"))
		}},
		{"the id is a link to outside", func(s *sandbox) error {
			if err := os.MkdirAll(filepath.Join(s.ws, ".switchboard", "attachments"), 0o700); err != nil {
				return err
			}
			return os.Symlink(s.outside, filepath.Join(s.ws, ".switchboard", "attachments", testID))
		}},
	}
	for _, tt := range escapes {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			if err := tt.setup(s); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, s.base)
			_, _, err := Materialize(s.ws, []File{{Name: "keep.txt", Content: "x"}, {Name: "b"}}, enabled(), fixedID(testID))
			if err == nil {
				t.Fatal("no error")
			}
			if changed, removed := diff(before, snapshot(t, s.base)); len(changed)+len(removed) > 0 {
				t.Errorf("changed %v, removed %v", changed, removed)
			}
		})
	}
	t.Run("link inside the workspace", func(t *testing.T) {
		s := newSandbox(t)
		if err := os.Mkdir(filepath.Join(s.ws, "store"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("store", filepath.Join(s.ws, ".switchboard")); err != nil {
			t.Fatal(err)
		}
		r, dir, err := Materialize(s.ws, []File{{Name: "a", Content: "x"}}, enabled(), fixedID(testID))
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(s.ws, "store", "attachments", testID); dir != want || r.RelDir != ".switchboard/attachments/"+testID {
			t.Errorf("dir = %q, relDir = %q; want %q", dir, r.RelDir, want)
		}
	})
}

func TestRemove(t *testing.T) {
	s := newSandbox(t)
	_, dir, err := Materialize(s.ws, []File{{Name: "a", Content: "x"}}, enabled(), fixedID(testID))
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := Materialize(s.ws, []File{{Name: "a", Content: "x"}}, enabled(), fixedID("other"))
	if err != nil {
		t.Fatal(err)
	}
	linkOut := filepath.Join(s.ws, ".switchboard", "attachments", "out")
	if err := os.Symlink(s.outside, linkOut); err != nil {
		t.Fatal(err)
	}
	refused := []string{
		s.outside,
		filepath.Join(s.outside, "keep.txt"),
		s.ws,
		filepath.Join(s.ws, ".switchboard"),
		filepath.Join(s.ws, ".switchboard", "attachments"),
		filepath.Join(s.ws, ".switchboard", "attachments", testID, ".."),
		filepath.Join(s.ws, ".switchboard", "attachments", testID, "..", "..", "..", "..", "outside"),
		linkOut,
		filepath.Join(s.ws, "notes.txt"),
	}
	for _, p := range refused {
		before := snapshot(t, s.base)
		if err := Remove(s.ws, p); err == nil {
			t.Errorf("Remove(%q): no error", p)
		}
		if changed, removed := diff(before, snapshot(t, s.base)); len(changed)+len(removed) > 0 {
			t.Errorf("Remove(%q) changed %v, removed %v", p, changed, removed)
		}
	}
	if err := Remove(s.ws, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("folder still there: %v", err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("other folder gone: %v", err)
	}
	if err := Remove(s.ws, dir); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if err := Remove(s.ws, ".switchboard/attachments/other"); err != nil {
		t.Errorf("relative Remove: %v", err)
	}
	if _, err := os.Lstat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("folder still there: %v", err)
	}
	if err := Remove("", dir); err == nil {
		t.Error("no workspace: no error")
	}
}

// When the attachments root itself leads outside the workspace, Remove
// deletes nothing, even inside that root.
func TestRemoveRootOutside(t *testing.T) {
	s := newSandbox(t)
	if err := os.Mkdir(filepath.Join(s.ws, ".switchboard"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.outside, filepath.Join(s.ws, ".switchboard", "attachments")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.outside, "victim"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s.base)
	if err := Remove(s.ws, filepath.Join(s.ws, ".switchboard", "attachments", "victim")); err == nil {
		t.Error("no error")
	}
	if changed, removed := diff(before, snapshot(t, s.base)); len(changed)+len(removed) > 0 {
		t.Errorf("changed %v, removed %v", changed, removed)
	}
}

func TestNewUUID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := newUUID()
		if len(id) != 36 || id[14] != '4' || !strings.Contains("89ab", id[19:20]) || !validID(id) || seen[id] {
			t.Fatalf("bad uuid %q", id)
		}
		seen[id] = true
	}
}
