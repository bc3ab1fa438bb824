package policy

import (
	"strings"
	"testing"
)

func TestIsAbortTrigger(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"stop", true},
		{"  STOP!  ", true},
		{"Please   stop.", true},
		{"stop, please", false}, // the reference's list has "stop please", not this
		{"stop please!!", true},
		{"stop don’t do anything", true},
		{"Стоп", true},
		{"停止。", true},
		{"halt?!", true},
		{"esc", true},
		{"stop it", false},
		{"/stop", false}, // a command: compaction.ParseCommand
		{"don't stop", false},
		{"stopp", true},
		{"", false},
		{"!!!", false},
		{"stop !", true},
		{"stop! .", false}, // the punctuation run ends at the space, as the reference's pattern
		{"stop" + strings.Repeat(" ", 30) + strings.Repeat("!", 30), true},
		{"stop" + strings.Repeat("!", 200), false}, // past maxAbortTriggerLen: not read
	} {
		if got := IsAbortTrigger(tt.in); got != tt.want {
			t.Errorf("IsAbortTrigger(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzIsAbortTrigger(f *testing.F) {
	for _, s := range []string{"stop", "Please stop!", "停止", "stop don’t do anything"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !IsAbortTrigger(s) || len(s) > maxAbortTriggerLen-4 {
			return
		}
		if !IsAbortTrigger(" \t" + s + "  ") {
			t.Fatalf("%q is a trigger but not with blanks around it", s)
		}
		if !IsAbortTrigger(strings.TrimRightFunc(s, isJSSpace) + "!") {
			t.Fatalf("%q is a trigger but not with a bang after it", s)
		}
	})
}

// BenchmarkIsAbortTrigger is its cost on an ordinary message: admission
// asks it of every message that is not a command.
func BenchmarkIsAbortTrigger(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		IsAbortTrigger("hello there, how are you today?")
	}
}
