package tools

import "testing"

// JSONResult's text is as JSON.stringify(payload, null, 2): HTML
// characters are not escaped.
func TestJSONResultKeepsHTMLCharacters(t *testing.T) {
	r := JSONResult(map[string]string{"error": "a <b> & c"})
	if want := "{\n  \"error\": \"a <b> & c\"\n}"; r.Text != want {
		t.Errorf("text = %q, want %q", r.Text, want)
	}
}
