package scripted

import (
	"os"
	"strings"
	"testing"
)

// TestDocs checks that the package documentation and README.md, which state
// the same rules, both cover every directive and the literal strings the
// model produces.
func TestDocs(t *testing.T) {
	facts := []string{
		"/when", "echo: ", "(empty)", "injected error", "call_<n>", "returned: <excerpt>", "failed",
		"toolUse", "length", "stop", "429, 502, 503 and 504", "200 characters", "divided by 4", "MaxSleep",
	}
	for _, n := range names[1:] {
		facts = append(facts, "/"+n)
	}
	for _, file := range []string{"doc.go", "README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// Compare word sequences, ignoring line breaks and comment markers.
		var words []string
		for _, w := range strings.Fields(string(b)) {
			if w != "//" {
				words = append(words, w)
			}
		}
		text := strings.Join(words, " ")
		for _, f := range facts {
			if !strings.Contains(text, f) {
				t.Errorf("%s does not mention %q", file, f)
			}
		}
	}
}
