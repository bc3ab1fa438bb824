package safeerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestMessage(t *testing.T) {
	base := errors.New("disk I/O error at /var/lib/x.db")
	tests := []struct {
		name string
		err  error
		msg  string
		ok   bool
	}{
		{"plain", base, "", false},
		{"nil", nil, "", false},
		{"safe", New("not an announce: a1"), "not an announce: a1", true},
		{"formatted", Errorf("already delivered: %s", "a2"), "already delivered: a2", true},
		{"wrapped by the server", fmt.Errorf("announces.redeliver: %w", New("not an announce: a3")), "not an announce: a3", true},
		{"safe wrapping a safe cause", Errorf("cannot redeliver: %w", New("gone")), "cannot redeliver: gone", true},
	}
	for _, tt := range tests {
		msg, ok := Message(tt.err)
		if msg != tt.msg || ok != tt.ok {
			t.Errorf("%s: Message = %q, %v; want %q, %v", tt.name, msg, ok, tt.msg, tt.ok)
		}
	}
	if err := Errorf("wrap: %w", base); !errors.Is(err, base) {
		t.Error("Errorf does not wrap with %w")
	}
}
