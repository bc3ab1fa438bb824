package sanitize

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The reference outputs in testdata were produced by the reference
// implementation itself; see testdata/README.md.

func readGolden[T any](t *testing.T, name string) []T {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var cases []T
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", name)
	}
	return cases
}

type goldenPair struct {
	In   string `json:"in"`
	Want string `json:"want"`
}

func TestReferenceRedact(t *testing.T) {
	for i, c := range readGolden[goldenPair](t, "reference_redact.json") {
		if got, _ := DefaultRedactor().Redact(c.In); got != c.Want {
			t.Errorf("case %d: Redact(%q)\n got %q\nwant %q", i, c.In, got, c.Want)
		}
	}
}

func TestReferenceSanitizeTextContent(t *testing.T) {
	for i, c := range readGolden[goldenPair](t, "reference_text.json") {
		if got := sanitizeTextContent(c.In); got != c.Want {
			t.Errorf("case %d: sanitizeTextContent(%q)\n got %q\nwant %q", i, c.In, got, c.Want)
		}
	}
}

func TestReferenceHistory(t *testing.T) {
	type historyCase struct {
		MaxChars     int              `json:"maxChars"`
		MaxBytes     int              `json:"maxBytes"`
		IncludeTools bool             `json:"includeTools"`
		Messages     []map[string]any `json:"messages"`
		Want         struct {
			Messages         []map[string]any `json:"messages"`
			Truncated        bool             `json:"truncated"`
			DroppedMessages  bool             `json:"droppedMessages"`
			ContentTruncated bool             `json:"contentTruncated"`
			ContentRedacted  bool             `json:"contentRedacted"`
			Bytes            int              `json:"bytes"`
		} `json:"want"`
	}
	for i, c := range readGolden[historyCase](t, "reference_history.json") {
		res := SanitizeHistory(c.Messages, HistoryOptions{IncludeTools: c.IncludeTools, MaxChars: c.MaxChars, MaxBytes: c.MaxBytes})
		// Compare through JSON, as the tool result is sent.
		var got []map[string]any
		data, err := json.Marshal(res.Messages)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		w := c.Want
		if diff := cmp.Diff(w.Messages, got); diff != "" {
			t.Errorf("case %d: messages (-want +got):\n%s", i, diff)
		}
		if res.Truncated != w.Truncated || res.DroppedMessages != w.DroppedMessages || res.ContentTruncated != w.ContentTruncated ||
			res.ContentRedacted != w.ContentRedacted || res.Bytes != w.Bytes {
			t.Errorf("case %d: got truncated=%v dropped=%v contentTruncated=%v redacted=%v bytes=%d, want %+v",
				i, res.Truncated, res.DroppedMessages, res.ContentTruncated, res.ContentRedacted, res.Bytes, w)
		}
	}
}
