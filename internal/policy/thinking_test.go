package policy

import (
	"strings"
	"testing"
)

func TestParseThinkCommand(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want ThinkCommand
	}{
		{"/think", true, ThinkCommand{Show: true}},
		{"  /THINKING:  ", true, ThinkCommand{Show: true}},
		{"/t max", true, ThinkCommand{Level: "high"}},
		{"/think Extra-High", true, ThinkCommand{Level: "xhigh"}},
		{"/think off", true, ThinkCommand{Level: "off"}},
		{"/think default", true, ThinkCommand{Reset: true}},
		{"/think inherit", true, ThinkCommand{Reset: true}},
		{"/think sideways", true, ThinkCommand{Invalid: "sideways"}},
		{"/think high\nwhy is the sky blue?", true, ThinkCommand{Level: "high", Text: "why is the sky blue?"}},
		{"/t low  keep   it short ", true, ThinkCommand{Level: "low", Text: "keep   it short"}},
		{"/think about this problem", false, ThinkCommand{}},
		{"/think default and go", false, ThinkCommand{}},
		{"/thinker", false, ThinkCommand{}},
		{"/th high", false, ThinkCommand{}},
		{"think high", false, ThinkCommand{}},
		{"please /think high", false, ThinkCommand{}},
		{"", false, ThinkCommand{}},
	}
	for _, tt := range tests {
		got, ok := ParseThinkCommand(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseThinkCommand(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestThinkCommandReply(t *testing.T) {
	const opts = "Options: default, off, minimal, low, medium, high, xhigh, adaptive."
	tests := []struct {
		c    ThinkCommand
		cur  string
		want string
		sets bool
	}{
		{ThinkCommand{Show: true}, "", "Current thinking level: default.\n" + opts, false},
		{ThinkCommand{Show: true}, "high", "Current thinking level: high.\n" + opts, false},
		{ThinkCommand{Reset: true}, "high", "Thinking level reset to default.", true},
		{ThinkCommand{Level: "off"}, "", "Thinking disabled.", true},
		{ThinkCommand{Level: "medium"}, "", "Thinking level set to medium.", true},
		{ThinkCommand{Invalid: "x"}, "low", `Unrecognized thinking level "x". Valid levels: default, off, minimal, low, medium, high, xhigh, adaptive.`, false},
		{ThinkCommand{Level: "high", Text: "go"}, "", "Thinking level set to high.", false},
	}
	for _, tt := range tests {
		if got := tt.c.Reply(tt.cur); got != tt.want {
			t.Errorf("%+v.Reply(%q) = %q, want %q", tt.c, tt.cur, got, tt.want)
		}
		if got := tt.c.Sets(); got != tt.sets {
			t.Errorf("%+v.Sets() = %v", tt.c, got)
		}
	}
}

func FuzzParseThinkCommand(f *testing.F) {
	for _, s := range []string{"/think", "/t high why", "/thinking: default", "/think a b", "/T\u00a0max"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseThinkCommand(s)
		if !ok {
			if c != (ThinkCommand{}) {
				t.Fatalf("not a command but %+v", c)
			}
			return
		}
		n := 0
		for _, b := range []bool{c.Show, c.Reset, c.Level != "", c.Invalid != ""} {
			if b {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%q: %+v is not exactly one of show, reset, level, invalid", s, c)
		}
		if c.Text != "" && c.Level == "" {
			t.Fatalf("%q: text without a level: %+v", s, c)
		}
		if c.Text != strings.TrimSpace(c.Text) {
			t.Fatalf("%q: text not trimmed: %q", s, c.Text)
		}
		if c.Level != "" && !strings.Contains(ThinkLevelsHint, c.Level) {
			t.Fatalf("%q: level %q", s, c.Level)
		}
	})
}

func TestSplitCommand(t *testing.T) {
	for _, tt := range []struct {
		in, name, rest string
		ok             bool
	}{
		{"/status", "status", "", true},
		{"  /Status:  now ", "status", "now ", true},
		{"/model a/b\nhi", "model", "a/b\nhi", true},
		{"/", "", "", true},
		{"status", "", "", false},
		{"", "", "", false},
	} {
		name, rest, ok := SplitCommand(tt.in)
		if name != tt.name || rest != tt.rest || ok != tt.ok {
			t.Errorf("SplitCommand(%q) = %q, %q, %v; want %q, %q, %v", tt.in, name, rest, ok, tt.name, tt.rest, tt.ok)
		}
	}
}

func TestThinkLevelsHint(t *testing.T) {
	if got := strings.Join(ThinkLevels, ", "); got != ThinkLevelsHint {
		t.Errorf("ThinkLevels joined = %q, ThinkLevelsHint = %q", got, ThinkLevelsHint)
	}
	for _, l := range ThinkLevels {
		if got, ok := NormalizeThinkLevel(l); !ok || got != l {
			t.Errorf("NormalizeThinkLevel(%q) = %q, %v; a listed level must map to itself", l, got, ok)
		}
	}
}
