package transcript

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func BenchmarkParseAssistantLine(b *testing.B) {
	line := []byte(lineAssistant)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseLine(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalAssistantLine(b *testing.B) {
	e, err := ParseLine([]byte(lineAssistant))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(lineAssistant)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibAnyAssistantLine is a yardstick: a generic decode and
// encode of the same line with encoding/json.
func BenchmarkStdlibAnyAssistantLine(b *testing.B) {
	line := []byte(lineAssistant)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncoderDecoder(b *testing.B) {
	h, entries, err := ReadJSONL(strings.NewReader(realistic))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(realistic)))
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteJSONL(io.Discard, h, entries); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ReadJSONL(strings.NewReader(realistic)); err != nil {
			b.Fatal(err)
		}
	}
}
