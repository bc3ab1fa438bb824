package policy

import "testing"

func TestGlobMatchPatterns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patterns []string
		want     bool
	}{
		{"echo", []string{"echo"}, true},
		{"echo", []string{"e*"}, true},
		{"echo", []string{"*o"}, true},
		{"echo", []string{"get-*"}, false},
		{"Echo", []string{"echo"}, false},
		{"x", nil, false},
	} {
		if got := GlobMatch(tc.name, tc.patterns); got != tc.want {
			t.Errorf("GlobMatch(%q, %v) = %v, want %v", tc.name, tc.patterns, got, tc.want)
		}
	}
}
