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
		if IsAbortTrigger(s) && len(s) < maxAbortTriggerLen-3 && !IsAbortTrigger(" "+s+"! ") {
			t.Fatalf("%q is a trigger but not with blanks and a bang around it", s)
		}
	})
}
