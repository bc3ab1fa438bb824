package policy

import "testing"

func TestParseElevatedCommand(t *testing.T) {
	tests := []struct {
		msg   string
		ok    bool
		want  ElevatedCommand
		reply string
	}{
		{"/elevated", true, ElevatedCommand{Show: true}, "Current elevated level: on.\nOptions: on, off, ask, full."},
		{" /Elevated ON ", true, ElevatedCommand{Level: "on"}, "⚙️ Elevated mode set to ask (approvals may still apply)."},
		{"/elev ask", true, ElevatedCommand{Level: "ask"}, "⚙️ Elevated mode set to ask (approvals may still apply)."},
		{"/elev:full", true, ElevatedCommand{Level: "full"}, "⚙️ Elevated mode set to full (auto-approve)."},
		{"/elevated off", true, ElevatedCommand{Level: "off"}, "⚙️ Elevated mode disabled."},
		{"/elevated maybe", true, ElevatedCommand{Raw: "maybe"}, `Unrecognized elevated level "maybe". Valid levels: off, on, ask, full.`},
		{"/elevated on run the deploy", false, ElevatedCommand{}, ""},
		{"/elevator", false, ElevatedCommand{}, ""},
		{"please /elevated on", false, ElevatedCommand{}, ""},
	}
	for _, tt := range tests {
		got, ok := ParseElevatedCommand(tt.msg)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseElevatedCommand(%q) = %+v, %v; want %+v, %v", tt.msg, got, ok, tt.want, tt.ok)
			continue
		}
		if ok && got.Reply("on") != tt.reply {
			t.Errorf("%q reply = %q, want %q", tt.msg, got.Reply("on"), tt.reply)
		}
	}
}

func FuzzParseElevatedCommand(f *testing.F) {
	for _, s := range []string{"/elevated", "/elev on", "/elevated:full", "/elevated x y", "/elev\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseElevatedCommand(s)
		if !ok {
			return
		}
		n := 0
		for _, b := range []bool{c.Show, c.Level != "", c.Raw != ""} {
			if b {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q parsed to %+v", s, c)
		}
		if c.Level != "" {
			if l, ok := NormalizeElevatedLevel(c.Level); !ok || l != c.Level {
				t.Errorf("%q: level %q", s, c.Level)
			}
		}
	})
}
