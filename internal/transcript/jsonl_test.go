package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// realistic is a whole transcript in the reference's format.
var realistic = strings.Join([]string{
	lineHeader,
	lineUserString,
	lineUserBlocks,
	lineAssistant,
	lineToolResult,
	lineToolError,
	lineAssistantError,
	lineModelChange,
	lineThinkingLevel,
	lineCustom,
	lineCompaction,
	lineUnknownType,
	lineReset,
}, "\n") + "\n"

func TestReadWriteJSONL(t *testing.T) {
	h, entries, err := ReadJSONL(strings.NewReader(realistic))
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != "b021fe47-3306-4c27-a716-95a392d331b6" || len(entries) != 12 {
		t.Fatalf("got header %+v and %d entries", h, len(entries))
	}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, h, entries); err != nil {
		t.Fatal(err)
	}
	in := strings.Split(strings.TrimSuffix(realistic, "\n"), "\n")
	out := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(in) != len(out) {
		t.Fatalf("wrote %d lines, want %d:\n%s", len(out), len(in), buf.String())
	}
	for i := range in {
		if d := jsonDiff(t, []byte(in[i]), []byte(out[i])); d != "" {
			t.Errorf("line %d differs (-in +out):\n%s", i+1, d)
		}
	}
	h2, entries2, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(h, h2); d != "" {
		t.Errorf("header (-first +second):\n%s", d)
	}
	if d := cmp.Diff(entries, entries2); d != "" {
		t.Errorf("entries (-first +second):\n%s", d)
	}
}

func TestDecoderStreaming(t *testing.T) {
	// Blank lines, CRLF endings, space around lines and a missing final
	// newline are all accepted; one-byte reads exercise buffering.
	in := "\n  \r\n" + lineHeader + "\r\n\n" + lineUserString + "\n \t \n" + lineAssistant + "\r\n" + strings.ReplaceAll(linePretty, "\n", " ") + "\n" + lineModelChange
	in = strings.Replace(in, `"parentId":"9a0b1c2d"`, `"parentId":"7e8f9a0b"`, 1)
	in = strings.Replace(in, `"parentId":"6a0b3c4d"`, `"parentId":"5f1c2a9e"`, 1)
	d := NewDecoder(iotest.OneByteReader(strings.NewReader(in)))
	// Next before Header reads the header implicitly.
	var ids []string
	for {
		e, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if want := []string{"5f1c2a9e", "7e8f9a0b", "e5", "0a1b2c3d"}; !cmp.Equal(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	h, err := d.Header()
	if err != nil || h.Version != 4 {
		t.Errorf("Header() after EOF = %+v, %v", h, err)
	}
	if _, err := d.Next(); err != io.EOF {
		t.Errorf("Next() after EOF = %v", err)
	}
}

func TestDecoderErrors(t *testing.T) {
	entry := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"custom","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-09-06T10:00:00.000Z","customType":"x"}`
	}
	const hdr = `{"type":"session","version":4,"id":"s1","timestamp":"2026-09-06T10:00:00.000Z"}`
	lines := func(l ...string) string { return strings.Join(l, "\n") + "\n" }
	tests := []struct {
		name    string
		in      string
		max     int
		entries int // entries returned before the error
		want    string
	}{
		{"empty", "", 0, 0, "transcript: line 1: missing session header"},
		{"only blank", "\n \n\t\n", 0, 0, "transcript: line 4: missing session header"},
		{"no header", lines("", entry("a", "")), 0, 0, `transcript: line 2: want a header of type "session", got type "custom"`},
		{"header without id", lines(`{"type":"session","version":4}`), 0, 0, "transcript: line 1: header without id"},
		{"header bad JSON", lines(`{"type":"session",`), 0, 0, "transcript: line 1: invalid JSON: unexpected end of JSON input"},
		{"header bad version", lines(`{"type":"session","id":"s","version":"4"}`), 0, 0, "transcript: line 1: version: want integer, got string"},
		{"invalid JSON", lines(hdr, entry("a", ""), `{"type":"custom","id":"b",}`), 0, 1,
			"transcript: line 3: invalid JSON: invalid character '}' looking for beginning of object key string"},
		{"missing id", lines(hdr, entry("a", ""), "", "", `{"type":"custom","parentId":"a"}`), 0, 1, "transcript: line 5: custom entry without id"},
		{"missing type", lines(hdr, `{"id":"a"}`), 0, 0, "transcript: line 2: entry without type"},
		{"duplicate id", lines(hdr, entry("a", ""), entry("b", "a"), "", entry("a", "b")), 0, 2,
			`transcript: line 5: duplicate id "a" (first on line 2)`},
		{"dangling parent", lines(hdr, entry("a", ""), entry("b", "zz")), 0, 1,
			`transcript: line 3: entry "b": parentId "zz" does not name an earlier entry`},
		{"parent later", lines(hdr, entry("a", "b"), entry("b", "")), 0, 0,
			`transcript: line 2: entry "a": parentId "b" does not name an earlier entry`},
		{"self parent", lines(hdr, entry("a", "a")), 0, 0,
			`transcript: line 2: entry "a": parentId "a" does not name an earlier entry`},
		{"second header", lines(hdr, entry("a", ""), hdr), 0, 1, "transcript: line 3: unexpected session header"},
		{"wrong type", lines(hdr, `{"type":"message","id":"m","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":1}]}}`), 0, 0,
			"transcript: line 2: message.content[0].text: want string, got number"},
		{"overlong line", lines(hdr, entry("a", ""), `{"type":"custom","id":"b","data":"`+strings.Repeat("x", 200)+`"}`, entry("c", "")), 150, 1,
			"transcript: line 3: line longer than 150 bytes"},
		{"overlong last line", lines(hdr, entry("a", ""), "") + strings.Repeat(" ", 151), 150, 1,
			"transcript: line 4: line longer than 150 bytes"},
		{"overlong header", strings.Repeat(" ", 100) + hdr, 150, 0, "transcript: line 1: line longer than 150 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(strings.NewReader(tt.in))
			d.SetMaxLineLength(tt.max)
			n := 0
			var err error
			for {
				if _, err = d.Next(); err != nil {
					break
				}
				n++
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v\nwant %s", err, tt.want)
			}
			if n != tt.entries {
				t.Errorf("got %d entries before the error, want %d", n, tt.entries)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Errorf("error %T is not a *LineError", err)
			}
			if _, again := d.Next(); again != err {
				t.Errorf("error not sticky: %v then %v", err, again)
			}
			if _, _, rerr := ReadJSONL(strings.NewReader(tt.in)); tt.max == 0 && (rerr == nil || rerr.Error() != tt.want) {
				t.Errorf("ReadJSONL error = %v", rerr)
			}
		})
	}
}

func TestDecoderDefaultMaxLine(t *testing.T) {
	body := `{"type":"custom","id":"big","parentId":null,"timestamp":"t","data":"`
	pad := DefaultMaxLineLength - len(body) - len(`"}`)
	exact := body + strings.Repeat("x", pad) + `"}`
	if len(exact) != DefaultMaxLineLength {
		t.Fatal("bad test line")
	}
	_, entries, err := ReadJSONL(strings.NewReader(lineHeader + "\n" + exact + "\r\n"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("line of exactly the limit: %d entries, %v", len(entries), err)
	}
	_, _, err = ReadJSONL(strings.NewReader(lineHeader + "\n" + body + "x" + strings.Repeat("x", pad) + `"}` + "\n"))
	if err == nil || err.Error() != "transcript: line 2: line longer than 16777216 bytes" {
		t.Fatalf("line over the limit: %v", err)
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(lineHeader+"\n"+lineUserString+"\n"), iotest.ErrReader(boom))
	_, _, err := ReadJSONL(r)
	if !errors.Is(err, boom) || err.Error() != "transcript: line 3: read: boom" {
		t.Errorf("error = %v", err)
	}
}

type errWriter struct{ n int }

func (w *errWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(p), nil
}

func TestEncoderErrors(t *testing.T) {
	h := NewHeader("s1", testTime, "")
	a := Entry{Type: TypeCustom, ID: "a", Timestamp: "t"}
	b := Entry{Type: TypeCustom, ID: "b", ParentID: ptr("a"), Timestamp: "t"}
	tests := []struct {
		name string
		run  func(e *Encoder) error
		want string
	}{
		{"entry before header", func(e *Encoder) error { return e.WriteEntry(a) }, "transcript: line 1: entry before header"},
		{"bad header", func(e *Encoder) error { return e.WriteHeader(Header{ID: "x"}) }, `transcript: line 1: want a header of type "session", got type ""`},
		{"header twice", func(e *Encoder) error {
			e.WriteHeader(h)
			return e.WriteHeader(h)
		}, "transcript: line 2: header already written"},
		{"duplicate", func(e *Encoder) error {
			e.WriteHeader(h)
			e.WriteEntry(a)
			e.WriteEntry(b)
			return e.WriteEntry(a)
		}, `transcript: line 4: duplicate id "a" (first on line 2)`},
		{"dangling", func(e *Encoder) error {
			e.WriteHeader(h)
			return e.WriteEntry(b)
		}, `transcript: line 2: entry "b": parentId "a" does not name an earlier entry`},
		{"no id", func(e *Encoder) error {
			e.WriteHeader(h)
			return e.WriteEntry(MessageEntry(NewUserMessage("x", testTime), testTime))
		}, "transcript: line 2: message entry without id"},
		{"bad extra", func(e *Encoder) error {
			e.WriteHeader(h)
			return e.WriteEntry(Entry{Type: "x", ID: "x", Extra: map[string]json.RawMessage{"k": json.RawMessage("nope")}})
		}, "transcript: line 2: k: invalid character 'o' in literal null (expecting 'u')"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		e := NewEncoder(&buf)
		err := tt.run(e)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: error = %v\nwant %s", tt.name, err, tt.want)
		}
		if again := e.WriteEntry(Entry{Type: "y", ID: "y"}); again != err {
			t.Errorf("%s: error not sticky: %v", tt.name, again)
		}
		if _, _, rerr := ReadJSONL(&buf); rerr != nil && !strings.Contains(tt.name, "header") && tt.name != "entry before header" {
			t.Errorf("%s: what was written before the error does not read back: %v", tt.name, rerr)
		}
	}

	err := WriteJSONL(&errWriter{n: 2}, h, []Entry{a, b, {Type: "c", ID: "c"}})
	if err == nil || err.Error() != "transcript: line 3: write: disk full" {
		t.Errorf("write error = %v", err)
	}
}
