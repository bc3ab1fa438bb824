package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func addLineSeeds(f *testing.F) {
	for _, l := range entryLines {
		f.Add([]byte(l))
	}
	for _, l := range []string{
		lineHeader,
		``,
		`null`,
		`{}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"image","data":"","mimeType":null}]}}`,
		`{"type":"message","id":"a","message":{"role":"x","content":[],"usage":{"input":1,"cost":{"total":1e-9}}}}`,
		`{"type":"message","id":"a","message":{"role":"user","content":"\ud800 \u2029","provenance":{"kind":null}}}`,
		"{\"type\":\"custom\",\"id\":\"a\xff\",\"k\":\"\xfe\",\"\xfd\":1}",
		`{"type":"custom","id":"a","type":"message","message":{"role":"user"}}`,
		`{"type":"custom","id":"a","\u0000":1,"":2,"x":{"y":[[[]]]}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","arguments":null,"id":null}],"isError":null}}`,
	} {
		f.Add([]byte(l))
	}
}

// FuzzParseLine checks that parsing never panics, and that whatever parses
// re-encodes to one valid JSON line that parses back to the same entry.
func FuzzParseLine(f *testing.F) {
	addLineSeeds(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseLine(line)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "transcript: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		out, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of a parsed entry: %v\nline: %q", err, line)
		}
		if !json.Valid(out) || bytes.ContainsAny(out, "\n\r") {
			t.Fatalf("output is not one JSON line: %q", out)
		}
		if dup, _ := duplicateMember(line); dup == nil {
			checkNoDuplicateMembers(t, out)
		}
		e2, err := ParseLine(out)
		if err != nil {
			t.Fatalf("re-parse: %v\nline: %q\nout:  %q", err, line, out)
		}
		if d := cmp.Diff(e, e2); d != "" {
			t.Fatalf("parse(marshal(e)) != e (-e +e2):\n%s\nline: %q\nout:  %q", d, line, out)
		}
		// Whatever the standard library decodes is decoded alike.
		var std map[string]any
		if json.Unmarshal(line, &std) == nil {
			var fromOut map[string]any
			if err := json.Unmarshal(out, &fromOut); err != nil {
				t.Fatal(err)
			}
			if std["type"] != fromOut["type"] || std["id"] != fromOut["id"] {
				t.Fatalf("type/id changed: %v/%v -> %v/%v", std["type"], std["id"], fromOut["type"], fromOut["id"])
			}
		}
	})
}

// FuzzReadJSONL checks that reading never panics, that every error names a
// line, and that what reads writes back to something that reads the same.
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(realistic))
	f.Add([]byte(""))
	f.Add([]byte("\n\n"))
	f.Add([]byte(lineHeader + "\n" + lineUserString + "\n" + lineUserString + "\n"))
	f.Add([]byte(lineHeader + "\r\n" + entryLines["legacy tool role"] + "\r\n"))
	f.Add([]byte(lineHeader + "\n\n" + lineNullsAndEmpties + "\n" + lineOddUsage))
	f.Add([]byte(lineHeader + "\n" + strings.Repeat("x", 300) + "\n"))
	f.Add([]byte(`{"type":"session","id":"s"}` + "\n" + `{"type":"custom","id":"a","parentId":"a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, entries, err := ReadJSONL(bytes.NewReader(data))
		if err != nil {
			checkLineError(t, err)
		} else {
			var buf bytes.Buffer
			if err := WriteJSONL(&buf, h, entries); err != nil {
				t.Fatalf("WriteJSONL of what ReadJSONL returned: %v", err)
			}
			h2, entries2, err := ReadJSONL(&buf)
			if err != nil {
				t.Fatalf("re-read: %v\n%s", err, buf.Bytes())
			}
			if d := cmp.Diff(h, h2); d != "" {
				t.Fatalf("header changed:\n%s", d)
			}
			if d := cmp.Diff(entries, entries2); d != "" {
				t.Fatalf("entries changed:\n%s", d)
			}
		}

		// The same input through a Decoder with a small line limit.
		d := NewDecoder(bytes.NewReader(data))
		d.SetMaxLineLength(64)
		for {
			_, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				checkLineError(t, err)
				break
			}
		}
	})
}

func checkLineError(t *testing.T, err error) {
	t.Helper()
	var le *LineError
	if !errors.As(err, &le) || le.Line < 1 || !strings.Contains(err.Error(), "line") {
		t.Fatalf("error does not name a line: %v", err)
	}
}
