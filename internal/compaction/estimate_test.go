package compaction

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// toolRequest is a request with 30 tools of 1 KiB schemas, as a warm
// turn's budget counts it several times.
func toolRequest() *provider.Request {
	req := &provider.Request{System: "You are a helpful assistant.",
		Messages: []provider.Message{{Role: "user", Text: "hello"}}}
	schema := json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","description":"` + strings.Repeat("a", 960) + `"}}}`)
	for range 30 {
		req.Tools = append(req.Tools, provider.ToolDef{Name: "tool", Description: "does things", Parameters: schema})
	}
	return req
}

// TestRequestCountsSchemasWithoutCopies: the estimate counts a tool's
// schema by its length, as a string of the same bytes, and allocates
// nothing; a tokenizer gets the schema's text.
func TestRequestCountsSchemasWithoutCopies(t *testing.T) {
	req := toolRequest()
	want := TextTokens(req.System) + messageOverhead + TextTokens("hello")
	for _, tool := range req.Tools {
		want += TextTokens(tool.Name) + TextTokens(tool.Description) + TextTokens(string(tool.Parameters))
	}
	if got := RequestTokens(req); got != want {
		t.Fatalf("RequestTokens = %d, want %d", got, want)
	}
	if n := testing.AllocsPerRun(10, func() { RequestTokens(req) }); n != 0 {
		t.Errorf("RequestTokens allocates %.0f times", n)
	}
	var seen []string
	c := Counter{Text: func(s string) int { seen = append(seen, s); return 1 }}
	c.Request(&provider.Request{Tools: req.Tools[:1]})
	if len(seen) != 4 || seen[3] != string(req.Tools[0].Parameters) {
		t.Errorf("the tokenizer saw %q", seen)
	}
}

func BenchmarkRequestTokens(b *testing.B) {
	req := toolRequest()
	b.ReportAllocs()
	for b.Loop() {
		RequestTokens(req)
	}
}
