package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestRelativeAge(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Minute, "just now"},
		{0, "just now"},
		{4 * time.Second, "just now"},
		{42 * time.Second, "42s ago"},
		{3*time.Minute + 59*time.Second, "3m ago"},
		{5 * time.Hour, "5h ago"},
		{47 * time.Hour, "47h ago"},
		{72 * time.Hour, "3d ago"},
	} {
		if got := relativeAge(tt.d); got != tt.want {
			t.Errorf("relativeAge(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestFormatTokens(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 950: "950", 1000: "1k", 12345: "12.3k", 2_000_000: "2M", 1_250_000: "1.2M"} {
		if got := formatTokens(n); got != want {
			t.Errorf("formatTokens(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	if got := excerpt("a\n  b\tc", 10); got != "a b c" {
		t.Errorf("excerpt = %q", got)
	}
	if got := excerpt("héllo wörld", 5); got != "héllo…" {
		t.Errorf("excerpt = %q", got)
	}
}

func TestReadParams(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		stdin   string
		want    string
		wantErr string
	}{
		{name: "none"},
		{name: "arg", args: []string{` {"a": 1} `}, want: `{"a": 1}`},
		{name: "stdin", args: []string{"-"}, stdin: "{\"b\":2}\n", want: `{"b":2}`},
		{name: "empty stdin", args: []string{"-"}, stdin: "  \n"},
		{name: "invalid", args: []string{`{"a":}`}, wantErr: "params: invalid JSON at byte 6"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readParams(strings.NewReader(tt.stdin), tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("readParams = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPrintMessage(t *testing.T) {
	msgs := []string{
		`{"role":"user","content":"line one\nline two","timestamp":1}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"let me look"},{"type":"toolCall","id":"call_1","name":"sessions_list","arguments":{"limit":5}}]}`,
		`{"role":"toolResult","toolCallId":"call_1","toolName":"sessions_list","content":[{"type":"text","text":"{\n \"count\": 0\n}"}],"isError":false}`,
		`{"role":"assistant","content":[],"stopReason":"error","errorMessage":"model\nexploded"}`,
	}
	render := func(tools bool) string {
		var b strings.Builder
		for _, m := range msgs {
			msg, err := decodeMessage(json.RawMessage(m))
			if err != nil {
				t.Fatal(err)
			}
			if err := printMessage(&b, msg, tools); err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	want := "user: line one\n  line two\nassistant: let me look\nassistant: (error: model exploded)\n"
	if diff := cmp.Diff(want, render(false)); diff != "" {
		t.Errorf("without tools (-want +got):\n%s", diff)
	}
	want = "user: line one\n  line two\nassistant: let me look\ntool call sessions_list {\"limit\":5}\n" +
		"tool result sessions_list: { \"count\": 0 }\nassistant: (error: model exploded)\n"
	if diff := cmp.Diff(want, render(true)); diff != "" {
		t.Errorf("with tools (-want +got):\n%s", diff)
	}
}

// TestRunWaiterText feeds chat events to the reply printer: it prints each
// deltaText, catches up after missed deltas, separates model turns, and
// prints what the final message adds.
func TestRunWaiterText(t *testing.T) {
	msg := func(text string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}})
		return b
	}
	delta := func(d, soFar string) *wire.ChatEvent {
		ev := &wire.ChatEvent{State: wire.ChatStateDelta, DeltaText: d}
		if soFar != "" {
			ev.Message = msg(soFar)
		}
		return ev
	}
	for _, tt := range []struct {
		name   string
		deltas []*wire.ChatEvent
		final  string
		want   []string // the writes
	}{
		{
			name:   "in order",
			deltas: []*wire.ChatEvent{delta("echo: ", "echo: "), delta("hi", "echo: hi")},
			final:  "echo: hi",
			want:   []string{"echo: ", "hi", "\n"},
		},
		{
			name:   "no message",
			deltas: []*wire.ChatEvent{delta("a ", ""), delta("b", "")},
			final:  "a b",
			want:   []string{"a ", "b", "\n"},
		},
		{
			name:   "missed deltas",
			deltas: []*wire.ChatEvent{delta("one ", "one "), delta("three", "one two three")},
			final:  "one two three four",
			want:   []string{"one ", "two three", " four", "\n"},
		},
		{
			name:   "joined late",
			deltas: []*wire.ChatEvent{delta("later", "earlier later")},
			final:  "earlier later",
			want:   []string{"earlier later", "\n"},
		},
		{
			name:   "two turns",
			deltas: []*wire.ChatEvent{delta("checking", "checking"), delta("done", "done")},
			final:  "done",
			want:   []string{"checking", "\n", "done", "\n"},
		},
		{
			name:   "final of a turn without deltas",
			deltas: []*wire.ChatEvent{delta("checking", "checking")},
			final:  "done",
			want:   []string{"checking", "\n", "done", "\n"},
		},
		{
			name:  "empty reply",
			final: "",
			want:  nil,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w chunkWriter
			rw := &runWaiter{out: &w}
			for _, d := range tt.deltas {
				rw.delta(d)
			}
			rw.finish(tt.final)
			if diff := cmp.Diff(tt.want, w.chunks); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessageOrigin(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string
	}{
		{`{"role":"user","content":"hi"}`, ""},
		{`{"role":"user","content":"hi","provenance":{"kind":"inter_session","sourceSessionKey":"agent:main:a","sourceTool":"sessions_send","chainId":"0123456789abcdef","chainHops":2}}`,
			"from agent:main:a via sessions_send, chain 01234567 hop 2"},
		{`{"role":"user","content":"hi","provenance":{"kind":"inter_session","sourceSessionKey":"agent:main:c"}}`, "from agent:main:c"},
	} {
		m, err := decodeMessage(json.RawMessage(tc.raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.origin(); got != tc.want {
			t.Errorf("origin(%s) = %q, want %q", tc.raw, got, tc.want)
		}
	}
	var b strings.Builder
	m, _ := decodeMessage(json.RawMessage(`{"role":"user","content":"ping","provenance":{"kind":"inter_session","sourceSessionKey":"agent:main:a","sourceTool":"sessions_send","chainId":"abc","chainHops":1}}`))
	if err := printMessage(&b, m, false); err != nil || b.String() != "user (from agent:main:a via sessions_send, chain abc hop 1): ping\n" {
		t.Errorf("printMessage = %q, %v", b.String(), err)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 10 * time.Minute: "10m", 45 * time.Second: "45s",
		time.Hour + 5*time.Second: "1h0m5s", 1500 * time.Millisecond: "1.5s", 0: "0s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
