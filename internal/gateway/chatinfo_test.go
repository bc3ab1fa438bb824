package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/policy"
)

func TestRoughDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{900 * time.Millisecond, "0s"},
		{12 * time.Second, "12s"},
		{61 * time.Second, "1m 1s"},
		{2*time.Hour + 5*time.Minute + 9*time.Second, "2h 5m"},
		{3 * 24 * time.Hour, "3d"},
		{3*24*time.Hour + 4*time.Hour + time.Minute, "3d 4h"},
		{-time.Minute, "0s"},
	} {
		if got := roughDuration(tt.d); got != tt.want {
			t.Errorf("roughDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestStatusText(t *testing.T) {
	base := chatStatus{Version: "1.2.3", Uptime: 90 * time.Second, Model: "openai/gpt-4.1", Window: 128000, Context: 3200,
		Input: 1500, Output: 420, Key: "agent:main:main", ID: "t-1", Agent: "main"}
	for _, tt := range []struct {
		name     string
		edit     func(*chatStatus)
		want     []string
		unwanted []string
	}{
		{"plain", func(*chatStatus) {}, []string{
			"🔀 Switchboard 1.2.3 · up 1m 30s\n", "🧠 Model: openai/gpt-4.1\n", "🧮 Tokens: 1.5k in / 420 out\n",
			"📚 Context 3.2k/128k (3%)\n", "🧵 Session: agent:main:main (agent main, transcript t-1)\n",
			"🪢 Queue: default\n", "🏃 Run: idle\n", "📨 Send policy: inherit"},
			[]string{"Compactions", "thinking", "updated", "debounce", "cap"}},
		{"everything set", func(s *chatStatus) {
			s.Thinking, s.Compactions, s.Updated, s.SendPolicy = "high", 2, 5*time.Minute, "deny"
			s.Queue = policy.QueueSettings{Mode: policy.QueueCollect, DebounceMs: 250, Cap: 7, Drop: "old"}
		}, []string{"🧠 Model: openai/gpt-4.1 · thinking high\n", " · 🧹 Compactions: 2\n", " · updated 5m ago\n",
			"🪢 Queue: collect · debounce 250ms · cap 7 (drop old)\n", "📨 Send policy: deny"}, nil},
		{"unknown window", func(s *chatStatus) { s.Window = 0 }, []string{"📚 Context 3.2k/?\n"}, nil},
		{"busy", func(s *chatStatus) { s.Busy, s.Running, s.Queued = true, 75*time.Second, 2 },
			[]string{"🏃 Run: running for 1m 15s · 2 waiting (/stop ends it)\n"}, nil},
		{"queued while idle", func(s *chatStatus) { s.Queued = 1 }, []string{"🏃 Run: idle · 1 waiting\n"}, nil},
		{"model does not resolve", func(s *chatStatus) {
			s.Model, s.ModelErr, s.Window, s.Context = "nope/x", `unknown provider "nope"`, 0, 0
		}, []string{"🧠 Model: nope/x · ⚠️ unknown provider \"nope\"\n", "📚 Context ?\n"}, []string{"0/?"}},
	} {
		st := base
		tt.edit(&st)
		got := statusText(st)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: lacks %q:\n%s", tt.name, w, got)
			}
		}
		for _, w := range tt.unwanted {
			if strings.Contains(got, w) {
				t.Errorf("%s: has %q:\n%s", tt.name, w, got)
			}
		}
	}
}
