package policy

import "testing"

func TestToolAllowed(t *testing.T) {
	for _, tc := range []struct {
		tool                   string
		allow, alsoAllow, deny []string
		want                   bool
	}{
		{"docs__search", nil, nil, nil, true},
		{"docs__search", nil, nil, []string{"docs__*"}, false},
		{"docs__search", []string{"docs__read_*"}, nil, nil, false},
		{"docs__read_page", []string{"docs__read_*"}, nil, nil, true},
		{"sessions_list", []string{"docs__*"}, []string{"sessions_list"}, nil, true},
		{"docs__read_page", []string{"*"}, nil, []string{"docs__read_page"}, false},
		{"Docs__Search", nil, nil, []string{"docs__search"}, false},
		{"exec", []string{""}, nil, nil, true},
	} {
		if got := ToolAllowed(tc.tool, tc.allow, tc.alsoAllow, tc.deny); got != tc.want {
			t.Errorf("ToolAllowed(%q, %v, %v, %v) = %v, want %v", tc.tool, tc.allow, tc.alsoAllow, tc.deny, got, tc.want)
		}
	}
}

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
