package irc

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Message
		err  bool
	}{
		{"PING :abc", Message{Command: "PING", Params: []string{"abc"}}, false},
		{":alice!~a@host PRIVMSG #room :hello there\r\n", Message{Prefix: "alice!~a@host", Command: "PRIVMSG", Params: []string{"#room", "hello there"}}, false},
		{":srv 001 bot :Welcome", Message{Prefix: "srv", Command: "001", Params: []string{"bot", "Welcome"}}, false},
		{"@time=x;id=1 :a!b@c privmsg bot ::)", Message{Prefix: "a!b@c", Command: "PRIVMSG", Params: []string{"bot", ":)"}}, false},
		{":srv 433 * bot :Nickname is already in use", Message{Prefix: "srv", Command: "433", Params: []string{"*", "bot", "Nickname is already in use"}}, false},
		{"JOIN  #a  ", Message{Command: "JOIN", Params: []string{"#a"}}, false},
		{"", Message{}, true},
		{":only-prefix", Message{}, true},
		{"@tags-only", Message{}, true},
	} {
		got, err := Parse(tc.line)
		if (err != nil) != tc.err {
			t.Errorf("Parse(%q) err = %v", tc.line, err)
			continue
		}
		if got.Prefix != tc.want.Prefix || got.Command != tc.want.Command || !slices.Equal(got.Params, tc.want.Params) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.line, got, tc.want)
		}
	}
	if n := (Message{Prefix: "alice!~a@host"}).Nick(); n != "alice" {
		t.Errorf("Nick = %q", n)
	}
}

func TestFormat(t *testing.T) {
	if l, err := Format("PRIVMSG", "#room", "hi there"); err != nil || l != "PRIVMSG #room :hi there" {
		t.Errorf("Format = %q %v", l, err)
	}
	for _, bad := range [][]string{{"#a b", "x"}, {"#a", "x\r\nQUIT"}, {"", "x"}, {":x", "y"}, {"#a", strings.Repeat("x", 510)}} {
		if l, err := Format("PRIVMSG", bad...); err == nil {
			t.Errorf("Format(%q) = %q, want error", bad, l)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(":a!b@c PRIVMSG #r :hello")
	f.Add("@t=1 :s 001 n :w")
	f.Add("PING")
	f.Fuzz(func(t *testing.T, line string) {
		m, err := Parse(line)
		if err != nil {
			return
		}
		if m.Command == "" || len(m.Params) > 15 {
			t.Fatalf("Parse(%q) = %+v", line, m)
		}
	})
}
