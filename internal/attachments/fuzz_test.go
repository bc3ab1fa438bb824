package attachments

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// materializeChecked runs Materialize in a fresh sandbox and checks what
// must hold for any input: nothing written outside the new attachment
// folder, nothing left behind after a failure, and after a success a
// folder holding exactly the receipt's files and manifest.
func materializeChecked(t *testing.T, files []File, lim Limits) (*Receipt, error) {
	t.Helper()
	s := newSandbox(t)
	before := snapshot(t, s.base)
	r, dir, err := Materialize(s.ws, files, lim, fixedID(testID))
	checkConfined(t, before, snapshot(t, s.base), testID, err == nil)
	if err != nil {
		if r != nil || dir != "" {
			t.Errorf("error %v with receipt %+v, dir %q", err, r, dir)
		}
		return nil, err
	}
	if len(files) == 0 {
		if r != nil || dir != "" {
			t.Errorf("no files gave receipt %+v, dir %q", r, dir)
		}
		return nil, nil
	}
	if want := filepath.Join(s.ws, ".switchboard", "attachments", testID); dir != want {
		t.Errorf("dir = %q, want %q", dir, want)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != r.Count+1 || r.Count != len(files) {
		t.Errorf("folder has %d entries for %d files (receipt count %d)", len(ents), len(files), r.Count)
	}
	total := 0
	for _, f := range r.Files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Errorf("file %q: %v", f.Name, err)
			continue
		}
		sum := sha256.Sum256(b)
		if len(b) != f.Bytes || hex.EncodeToString(sum[:]) != f.Sha256 {
			t.Errorf("file %q: %d bytes, receipt %+v", f.Name, len(b), f)
		}
		total += len(b)
	}
	if total != r.TotalBytes {
		t.Errorf("total %d, receipt %d", total, r.TotalBytes)
	}
	var m Receipt
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("manifest: %v %s", err, b)
	}
	if diff := cmp.Diff(*r, m); diff != "" {
		t.Errorf("manifest (-receipt +manifest):\n%s", diff)
	}
	return r, nil
}

// oracleSpace lists JavaScript's whitespace (ECMA-262 WhiteSpace and
// LineTerminator), for the independent oracles below.
const oracleSpace = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

func oracleTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return strings.ContainsRune(oracleSpace, r) })
}

// nameOK is an independent statement of the name rules.
func nameOK(name string) bool {
	name = oracleTrim(name)
	if name == "" || name == "." || name == ".." || name == ".manifest.json" {
		return false
	}
	for _, r := range []byte(name) {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return false
		}
	}
	return strings.ToValidUTF8(name, "\uFFFD") == name
}

func FuzzNames(f *testing.F) {
	for _, s := range [][2]string{
		{"a.txt", "b.txt"}, {"", "x"}, {" a ", "a"}, {"../x", "y"}, {"..", "."}, {".manifest.json", "m"},
		{"a\\b", "c"}, {"a\x00b", "c"}, {"\u00a0z\ufeff", "z"}, {"\u0085", "n"}, {strings.Repeat("l", 256), "s"},
		{"con", "aux"}, {"a\xff", "b"}, {"-", "~"}, {".hidden", ".switchboard"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		files := []File{{Name: a, Content: "first"}, {Name: b, Content: "second"}}
		r, err := materializeChecked(t, files, enabled())
		if e, ok := errors.AsType[*Error](err); ok {
			if !strings.HasPrefix(e.Message, "attachments_invalid_name (") && !strings.HasPrefix(e.Message, "attachments_duplicate_name (") {
				t.Errorf("unexpected rejection %q", e.Message)
			}
			if e.Status != "error" {
				t.Errorf("status %q", e.Status)
			}
		}
		valid := nameOK(a) && nameOK(b) && oracleTrim(a) != oracleTrim(b)
		if err == nil && !valid {
			t.Errorf("accepted %q, %q", a, b)
		}
		if _, isRule := errors.AsType[*Error](err); isRule && valid {
			t.Errorf("rejected valid names %q, %q: %v", a, b, err)
		}
		if r != nil && (r.Files[0].Name != oracleTrim(a) || r.Files[1].Name != oracleTrim(b)) {
			t.Errorf("receipt names %q, %q", r.Files[0].Name, r.Files[1].Name)
		}
	})
}

func FuzzBase64(f *testing.F) {
	for _, s := range []string{
		"aGVsbG8=", "aGVsbA==", "", "====", "A===", "AA=A", "ab-_", " aGVs\nbG8= ", "AB==",
		"aGVs\u3000bG8=", "aGVs\u0085bG8=", strings.Repeat("A", 24), strings.Repeat("A", 28), "AAAA" + strings.Repeat(" ", 60),
	} {
		f.Add(s, uint8(16))
	}
	f.Fuzz(func(t *testing.T, content string, max uint8) {
		lim := enabled()
		lim.MaxFileBytes = int(max) + 1
		r, err := materializeChecked(t, []File{{Name: "f.bin", Content: content, Encoding: "base64"}}, lim)

		// Independent oracle: JavaScript-whitespace stripped, standard
		// alphabet with padding, bounded before and after decoding.
		maxEnc := (lim.MaxFileBytes + 2) / 3 * 4
		norm := strings.Map(func(r rune) rune {
			if strings.ContainsRune(oracleSpace, r) {
				return -1
			}
			return r
		}, content)
		want, decErr := base64.StdEncoding.DecodeString(norm)
		ok := decErr == nil && norm != "" && !strings.ContainsAny(norm, "\r\n") &&
			len(norm) <= maxEnc && len(want) <= lim.MaxFileBytes && utf16Len(content) <= 2*maxEnc
		switch {
		case err == nil && !ok:
			t.Errorf("accepted %q", content)
		case err != nil && ok:
			t.Errorf("rejected %q: %v", content, err)
		case err != nil:
			if status, msg := Report(err); status != "error" || msg != "attachments_invalid_base64_or_too_large" {
				t.Errorf("error %q %q", status, msg)
			}
		default:
			sum := sha256.Sum256(want)
			if r.Files[0].Bytes != len(want) || r.Files[0].Sha256 != hex.EncodeToString(sum[:]) {
				t.Errorf("receipt %+v, want %d bytes", r.Files[0], len(want))
			}
		}
	})
}

// FuzzMaterialize combines names, contents, encodings and limits.
func FuzzMaterialize(f *testing.F) {
	f.Add("a.txt", "hello", "", "b.bin", "aGVsbG8=", "base64", uint16(8), uint16(10))
	f.Add("a", "12345", "utf8", "a", "x", "", uint16(100), uint16(100))
	f.Add("../a", "x", "", "b", "y", "", uint16(1), uint16(1))
	f.Add("é", "ééé", "", "ü", "AAAA", " base64 ", uint16(6), uint16(9))
	f.Add("x", strings.Repeat("A", 40), "base64", ".manifest.json", "", "", uint16(30), uint16(30))
	f.Fuzz(func(t *testing.T, n1, c1, e1, n2, c2, e2 string, maxFile, maxTotal uint16) {
		lim := Limits{Enabled: true, MaxFiles: 2, MaxFileBytes: int(maxFile), MaxTotalBytes: int(maxTotal)}
		_, err := materializeChecked(t, []File{{Name: n1, Content: c1, Encoding: e1}, {Name: n2, Content: c2, Encoding: e2}}, lim)
		if e, ok := errors.AsType[*Error](err); ok {
			known := false
			for _, p := range []string{"attachments_invalid_name (", "attachments_duplicate_name (", "attachments_invalid_base64_or_too_large",
				"attachments_file_bytes_exceeded (name=", "attachments_total_bytes_exceeded (totalBytes="} {
				known = known || strings.HasPrefix(e.Message, p)
			}
			if !known || e.Status != "error" {
				t.Errorf("unexpected rejection %+v", e)
			}
		}
	})
}
