package secrets

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestMasker(t *testing.T) {
	m := New("sk-live-0123456789abcdef", "short", "", "sk-live-0123456789abcdef", "hook-secret-xyz", "hook-secret-xyz-longer")
	for _, tc := range []struct{ in, want string }{
		{"Invalid API key provided: Bearer sk-live-0123456789abcdef.", "Invalid API key provided: Bearer [redacted]."},
		{"token hook-secret-xyz-longer and hook-secret-xyz", "token [redacted] and [redacted]"},
		{"short stays", "short stays"},
		{"", ""},
	} {
		if got := m.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if New("short", " ") != nil {
		t.Error("a masker of nothing is not nil")
	}
	var none *Masker
	if none.String("sk-live-0123456789abcdef") != "sk-live-0123456789abcdef" || none.Error(io.EOF) != io.EOF {
		t.Error("the nil masker changed something")
	}
	base := fmt.Errorf("provider: %w: key sk-live-0123456789abcdef refused", io.ErrUnexpectedEOF)
	err := m.Error(base)
	if strings.Contains(err.Error(), "sk-live") || !strings.Contains(err.Error(), Mask) {
		t.Fatalf("Error = %q", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the masked error does not unwrap")
	}
	if m.Error(io.EOF) != io.EOF {
		t.Error("an error without a secret was wrapped")
	}
}

func FuzzMasker(f *testing.F) {
	f.Add("Bearer sk-live-0123456789abcdef", "sk-live-0123456789abcdef")
	f.Add("aaaaaaaaaaaaaaaaaa", "aaaaaaaaa")
	f.Fuzz(func(t *testing.T, text, secret string) {
		m := New(secret)
		if m == nil {
			return
		}
		if got := m.String(text); strings.Contains(got, strings.TrimSpace(secret)) && !strings.Contains(Mask, strings.TrimSpace(secret)) {
			t.Fatalf("String(%q) = %q still holds the secret", text, got)
		}
	})
}
