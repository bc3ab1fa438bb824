package early

import (
	"slices"
	"testing"
)

func TestServeArgs(t *testing.T) {
	for _, tc := range []struct {
		cmdline string
		want    []string
	}{
		{"switchboard\x00serve\x00", []string{"switchboard", "serve"}},
		{"/usr/local/bin/switchboard\x00serve\x00--port\x000\x00", []string{"/usr/local/bin/switchboard", "serve", "--port", "0"}},
		{"switchboard\x00serve\x00--bind\x00\x00", []string{"switchboard", "serve", "--bind", ""}}, // an empty argument
		{"switchboard\x00serve", []string{"switchboard", "serve"}},                                 // no final NUL
		{"switchboard\x00status\x00", nil},
		{"switchboard\x00--help\x00serve\x00", nil}, // serve only as the first argument
		{"switchboard\x00servex\x00", nil},
		{"switchboard\x00", nil},
		{"", nil},
	} {
		got, ok := serveArgs([]byte(tc.cmdline))
		if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("serveArgs(%q) = %q, %v; want %q", tc.cmdline, got, ok, tc.want)
		}
	}
}
