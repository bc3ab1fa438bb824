package policy

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func ip(n int) *int { return &n }

func TestNormalizeQueueMode(t *testing.T) {
	for in, want := range map[string]QueueMode{
		"steer": QueueSteer, "Steering": QueueSteer, " STEER ": QueueSteer,
		"followup": QueueFollowup, "followups": QueueFollowup, "follow-ups": QueueFollowup,
		"collect": QueueCollect, "coalesce": QueueCollect,
		"interrupt": QueueInterrupt, "interrupts": QueueInterrupt, "abort": QueueInterrupt,
		"": "", "queue": "", "steer-backlog": "", "follow": "",
	} {
		got, ok := NormalizeQueueMode(in)
		if got != want || ok != (want != "") {
			t.Errorf("NormalizeQueueMode(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for in, want := range map[string]QueueDrop{
		"old": DropOld, "oldest": DropOld, "NEW": DropNew, "newest": DropNew,
		"summarize": DropSummarize, "summary": DropSummarize, "drop": "", "": "",
	} {
		got, ok := NormalizeQueueDrop(in)
		if got != want || ok != (want != "") {
			t.Errorf("NormalizeQueueDrop(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestResolveQueuePrecedence(t *testing.T) {
	full := QueueConfig{
		Mode: "followup", Cap: ip(7), Drop: "old",
		ByChannel:           map[string]string{"discord": "collect", "slack": "nonsense"},
		DebounceMsByChannel: map[string]int{"discord": 1000},
	}
	def := QueueSettings{Mode: QueueSteer, DebounceMs: 500, Cap: 20, Drop: DropSummarize}
	tests := []struct {
		name string
		in   QueueInput
		want QueueSettings
	}{
		{"nothing set: defaults", QueueInput{}, def},
		{"config mode", QueueInput{Config: QueueConfig{Mode: "collect"}}, QueueSettings{QueueCollect, 500, 20, DropSummarize}},
		{"config alias", QueueInput{Config: QueueConfig{Mode: "abort"}}, QueueSettings{QueueInterrupt, 500, 20, DropSummarize}},
		{"bad config mode falls to steer", QueueInput{Config: QueueConfig{Mode: "bogus"}}, def},
		{"byChannel beats mode", QueueInput{Channel: "discord", Config: full}, QueueSettings{QueueCollect, 1000, 7, DropOld}},
		{"byChannel case-insensitive channel", QueueInput{Channel: "Discord", Config: full}, QueueSettings{QueueCollect, 1000, 7, DropOld}},
		{"bad byChannel value falls to mode", QueueInput{Channel: "slack", Config: full}, QueueSettings{QueueFollowup, 500, 7, DropOld}},
		{"other channel uses mode", QueueInput{Channel: "webchat", Config: full}, QueueSettings{QueueFollowup, 500, 7, DropOld}},
		{"session beats byChannel", QueueInput{Channel: "discord", Config: full, Session: QueueOverride{Mode: QueueInterrupt}}, QueueSettings{QueueInterrupt, 1000, 7, DropOld}},
		{"request beats session", QueueInput{Request: "steer", Channel: "discord", Config: full, Session: QueueOverride{Mode: QueueInterrupt}}, QueueSettings{QueueSteer, 1000, 7, DropOld}},
		{"request alias", QueueInput{Request: "coalesce"}, QueueSettings{QueueCollect, 500, 20, DropSummarize}},
		{"bad request ignored", QueueInput{Request: "zzz", Session: QueueOverride{Mode: QueueFollowup}}, QueueSettings{QueueFollowup, 500, 20, DropSummarize}},
		{"session options beat config", QueueInput{Channel: "discord", Config: full, Session: QueueOverride{DebounceMs: ip(0), Cap: ip(3), Drop: DropNew}}, QueueSettings{QueueCollect, 0, 3, DropNew}},
		{"cap below 1 ignored", QueueInput{Config: QueueConfig{Cap: ip(0)}, Session: QueueOverride{Cap: ip(-2)}}, def},
		{"config debounce", QueueInput{Config: QueueConfig{DebounceMs: ip(250)}}, QueueSettings{QueueSteer, 250, 20, DropSummarize}},
		{"channel debounce beats config debounce", QueueInput{Channel: "discord", Config: QueueConfig{DebounceMs: ip(250), DebounceMsByChannel: map[string]int{"discord": 900}}}, QueueSettings{QueueSteer, 900, 20, DropSummarize}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ResolveQueue(tt.in)); diff != "" {
				t.Errorf("ResolveQueue (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseQueueCommand(t *testing.T) {
	tests := []struct {
		in     string
		ok     bool
		want   QueueCommand
		reply  string
		status QueueOverride // Apply over an override with mode followup
	}{
		{in: "hello", ok: false},
		{in: "/queuex collect", ok: false},
		{in: "please /queue collect", ok: false},
		{in: "/queue", ok: true, want: QueueCommand{Show: true},
			reply:  "Current queue settings: mode=steer, debounce=500ms, cap=20, drop=summarize.\nOptions: modes steer, followup, collect, interrupt; debounce:<ms|s|m>, cap:<n>, drop:old|new|summarize",
			status: QueueOverride{Mode: QueueFollowup}},
		{in: "/queue collect", ok: true, want: QueueCommand{Set: QueueOverride{Mode: QueueCollect}}, reply: "Queue mode set to collect.", status: QueueOverride{Mode: QueueCollect}},
		{in: " /QUEUE: Coalesce ", ok: true, want: QueueCommand{Set: QueueOverride{Mode: QueueCollect}}, reply: "Queue mode set to collect.", status: QueueOverride{Mode: QueueCollect}},
		{in: "/queue collect debounce:0.5s cap:25 drop:summarize", ok: true,
			want:  QueueCommand{Set: QueueOverride{Mode: QueueCollect, DebounceMs: ip(500), Cap: ip(25), Drop: DropSummarize}},
			reply: "Queue mode set to collect.", status: QueueOverride{Mode: QueueCollect, DebounceMs: ip(500), Cap: ip(25), Drop: DropSummarize}},
		{in: "/queue cap=5", ok: true, want: QueueCommand{Set: QueueOverride{Cap: ip(5)}}, reply: "Queue options updated.", status: QueueOverride{Mode: QueueFollowup, Cap: ip(5)}},
		{in: "/queue reset", ok: true, want: QueueCommand{Reset: true}, reply: "Queue mode reset to default.", status: QueueOverride{}},
		{in: "/queue default", ok: true, want: QueueCommand{Reset: true}, reply: "Queue mode reset to default.", status: QueueOverride{}},
		{in: "/queue sideways", ok: true,
			want:   QueueCommand{Errors: []string{`Unrecognized queue mode "sideways". Valid modes: steer, followup, collect, interrupt.`}},
			reply:  `Unrecognized queue mode "sideways". Valid modes: steer, followup, collect, interrupt.`,
			status: QueueOverride{Mode: QueueFollowup}},
		{in: "/queue steer cap:0 drop:maybe debounce:-1s", ok: true,
			want: QueueCommand{Set: QueueOverride{Mode: QueueSteer}, Errors: []string{
				`Invalid debounce "-1s". Use ms/s/m (e.g. debounce:1500ms, debounce:2s).`,
				`Invalid cap "0". Use a positive integer (e.g. cap:10).`,
				`Invalid drop policy "maybe". Use drop:old, drop:new, or drop:summarize.`,
			}},
			reply:  `Invalid debounce "-1s". Use ms/s/m (e.g. debounce:1500ms, debounce:2s). Invalid cap "0". Use a positive integer (e.g. cap:10). Invalid drop policy "maybe". Use drop:old, drop:new, or drop:summarize.`,
			status: QueueOverride{Mode: QueueFollowup}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseQueueCommand(tt.in)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseQueueCommand (-want +got):\n%s", diff)
			}
			def := ResolveQueue(QueueInput{})
			if r := got.Reply(def); r != tt.reply {
				t.Errorf("Reply = %q, want %q", r, tt.reply)
			}
			if diff := cmp.Diff(tt.status, got.Apply(QueueOverride{Mode: QueueFollowup})); diff != "" {
				t.Errorf("Apply (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseQueueDebounce(t *testing.T) {
	for in, want := range map[string]int{
		"1500": 1500, "1500ms": 1500, "2s": 2000, "0.5s": 500, "1m": 60000, "1h": 3600000, "1d": 86400000, "0": 0, "1.4": 1,
		"": -1, "-1": -1, "s": -1, "abc": -1, "1e3": -1, "Inf": -1, "NaN": -1, "0x10": -1, "1w": -1, "100000d": -1,
	} {
		got, ok := ParseQueueDebounce(in)
		if (want < 0) == ok || (ok && got != want) {
			t.Errorf("ParseQueueDebounce(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
}

func TestCollectAndOverflowText(t *testing.T) {
	got := CollectPrompt("", []string{"first", "second\n"})
	want := "[Queued messages while agent was busy]\n\n---\nQueued #1\nfirst\n\n---\nQueued #2\nsecond"
	if got != want {
		t.Errorf("CollectPrompt = %q, want %q", got, want)
	}
	sum := OverflowSummary(2, []string{"a b", "c"})
	if want := "[Queue overflow] Dropped 2 messages due to cap.\nSummary:\n- a b\n- c"; sum != want {
		t.Errorf("OverflowSummary = %q, want %q", sum, want)
	}
	if got := OverflowSummary(1, nil); got != "[Queue overflow] Dropped 1 message due to cap." {
		t.Errorf("OverflowSummary(1) = %q", got)
	}
	if got := OverflowSummary(0, []string{"x"}); got != "" {
		t.Errorf("OverflowSummary(0) = %q", got)
	}
	got = CollectPrompt("S", []string{"x"})
	if want := "[Queued messages while agent was busy]\n\nS\n\n---\nQueued #1\nx"; got != want {
		t.Errorf("CollectPrompt with summary = %q", got)
	}
	if got := QueueSummaryLine("  a \n\t b  "); got != "a b" {
		t.Errorf("QueueSummaryLine = %q", got)
	}
	long := QueueSummaryLine(strings.Repeat("é", 300))
	if utf8.RuneCountInString(long) != 160 || !strings.HasSuffix(long, "…") {
		t.Errorf("QueueSummaryLine(long) has %d runes: %q", utf8.RuneCountInString(long), long)
	}
}

func TestApplyQueueCap(t *testing.T) {
	tests := []struct {
		pending, limit int
		drop           QueueDrop
		want           CapDecision
	}{
		{0, 20, DropNew, CapDecision{}},
		{19, 20, DropNew, CapDecision{}},
		{20, 20, DropNew, CapDecision{Refuse: true}},
		{20, 20, DropOld, CapDecision{DropOldest: 1}},
		{20, 20, DropSummarize, CapDecision{DropOldest: 1, Summarize: true}},
		{25, 20, DropSummarize, CapDecision{DropOldest: 6, Summarize: true}},
		{1000, 0, DropNew, CapDecision{}},
	}
	for _, tt := range tests {
		if got := ApplyQueueCap(tt.pending, tt.limit, tt.drop); got != tt.want {
			t.Errorf("ApplyQueueCap(%d, %d, %s) = %+v, want %+v", tt.pending, tt.limit, tt.drop, got, tt.want)
		}
	}
}

func FuzzParseQueueCommand(f *testing.F) {
	for _, s := range []string{"/queue", "/queue collect debounce:0.5s cap:25 drop:summarize", "/queue: reset", "/queue x=y", "/queue debounce:1e400", "/queue cap:99999999999", "/queue\u00a0steer", "/queue:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cmd, ok := ParseQueueCommand(s)
		if !ok {
			return
		}
		_ = cmd.Reply(ResolveQueue(QueueInput{}))
		o := cmd.Apply(QueueOverride{})
		if o.Cap != nil && *o.Cap < 1 {
			t.Fatalf("cap %d accepted from %q", *o.Cap, s)
		}
		if o.DebounceMs != nil && *o.DebounceMs < 0 {
			t.Fatalf("debounce %d accepted from %q", *o.DebounceMs, s)
		}
		if o.Mode != "" {
			if _, ok := NormalizeQueueMode(string(o.Mode)); !ok {
				t.Fatalf("mode %q from %q", o.Mode, s)
			}
		}
		if len(cmd.Errors) > 0 && (o != QueueOverride{}) {
			t.Fatalf("override changed despite errors for %q", s)
		}
	})
}
