package policy

import (
	"slices"
	"testing"
)

func TestHTTPToolAllowed(t *testing.T) {
	tests := []struct {
		name        string
		tool        string
		allow, deny []string
		want        bool
	}{
		{"read tool", "sessions_list", nil, nil, true},
		{"history", "sessions_history", nil, nil, true},
		{"agents_list", "agents_list", nil, nil, true},
		{"default deny send", "sessions_send", nil, nil, false},
		{"default deny spawn", "sessions_spawn", nil, nil, false},
		{"default deny exec", "exec", nil, nil, false},
		{"bash is exec", "Bash", nil, nil, false},
		{"default deny cron", "cron", nil, nil, false},
		{"default deny gateway", "gateway", nil, nil, false},
		{"default deny nodes", "nodes", nil, nil, false},
		{"case and space", " Sessions_Send ", nil, nil, false},
		{"allow re-enables", "sessions_send", []string{"sessions_send"}, nil, true},
		{"allow normalised", "sessions_send", []string{" SESSIONS_SEND "}, nil, true},
		{"star re-enables nothing", "sessions_send", []string{"*"}, nil, false},
		{"glob re-enables nothing", "sessions_send", []string{"sessions_*"}, nil, false},
		{"deny wins over allow", "sessions_send", []string{"sessions_send"}, []string{"sessions_send"}, false},
		{"deny extra tool", "sessions_list", nil, []string{"sessions_list"}, false},
		{"deny glob", "sessions_history", nil, []string{"sessions_*"}, false},
		{"deny star", "agents_list", nil, []string{"*"}, false},
		{"deny other", "agents_list", nil, []string{"browser"}, true},
		{"blank tool", "  ", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HTTPToolAllowed(tt.tool, tt.allow, tt.deny); got != tt.want {
				t.Errorf("HTTPToolAllowed(%q, %q, %q) = %v, want %v", tt.tool, tt.allow, tt.deny, got, tt.want)
			}
		})
	}
}

func TestDefaultHTTPToolDenyIsACopy(t *testing.T) {
	a := DefaultHTTPToolDeny()
	a[0] = "changed"
	if b := DefaultHTTPToolDeny(); b[0] != "exec" || !slices.Contains(b, "sessions_send") {
		t.Errorf("DefaultHTTPToolDeny = %q", b)
	}
}
