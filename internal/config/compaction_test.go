package config

import (
	"strings"
	"testing"
	"time"
)

func TestCompactionDefaults(t *testing.T) {
	c := mustParse(t, `{}`, nil)
	got := c.Compaction()
	want := Compaction{Enabled: true, Mode: "safeguard", TimeoutSeconds: 180, KeepRecentTokens: 20000, ReserveTokens: 20000,
		RecentTurnsPreserve: 3, IdentifierPolicy: "strict", QualityGuard: true, QualityMaxRetries: 1,
		MemoryFlush: MemoryFlush{Enabled: true, SoftThresholdTokens: 4000}, Background: true, MaxConcurrentSummaries: 4}
	if got != want {
		t.Errorf("defaults = %+v\nwant %+v", got, want)
	}
}

func TestCompactionKeys(t *testing.T) {
	c := mustParse(t, `{
		models: { providers: { local: { baseUrl: "http://x/v1", apiKey: "k", api: "openai-completions",
			models: [{ id: "m", contextWindow: 100000, contextTokens: 60000 }, { id: "n", contextWindow: 9000 }] } } },
		agents: { defaults: { compaction: { enabled: false, mode: "default", model: "local/n", timeoutSeconds: 30,
			keepRecentTokens: 5000, identifierPolicy: "off", qualityGuard: { enabled: false, maxRetries: 2 },
			midTurnPrecheck: { enabled: true }, notifyUser: true, maxActiveTranscriptBytes: "20mb",
			memoryFlush: { enabled: true, softThresholdTokens: 4000 } } } },
	}`, nil)
	got := c.Compaction()
	if got.Enabled || got.Mode != "default" || got.Model != "local/n" || got.TimeoutSeconds != 30 || got.KeepRecentTokens != 5000 ||
		got.IdentifierPolicy != "off" || got.QualityGuard || got.QualityMaxRetries != 2 || !got.MidTurnPrecheck || !got.NotifyUser ||
		got.MaxActiveBytes != 20<<20 {
		t.Errorf("Compaction() = %+v", got)
	}
	if ct, cw := c.ModelWindow("local", "m"); ct != 60000 || cw != 100000 {
		t.Errorf("ModelWindow(m) = %d, %d", ct, cw)
	}
	if ct, cw := c.ModelWindow("local", "n"); ct != 0 || cw != 9000 {
		t.Errorf("ModelWindow(n) = %d, %d", ct, cw)
	}
	if ct, cw := c.ModelWindow("nope", "n"); ct != 0 || cw != 0 {
		t.Errorf("ModelWindow(unknown) = %d, %d", ct, cw)
	}
	f := mustParse(t, `{
		models: { providers: { local: { baseUrl: "http://x/v1", apiKey: "k", api: "openai-completions", models: [{ id: "m" }] } } },
		agents: { defaults: { compaction: {
			memoryFlush: { enabled: false, softThresholdTokens: 6000, prompt: "Write notes.", systemPrompt: "Flush now.", model: "local/m" },
			background: { enabled: false, softThresholdTokens: 15000, maxConcurrent: 2 } } } },
	}`, nil)
	fc := f.Compaction()
	if want := (MemoryFlush{SoftThresholdTokens: 6000, Prompt: "Write notes.", SystemPrompt: "Flush now.", Model: "local/m"}); fc.MemoryFlush != want ||
		fc.Background || fc.BackgroundSoftTokens != 15000 || fc.MaxConcurrentSummaries != 2 {
		t.Errorf("memoryFlush/background = %+v", fc)
	}
	p := mustParse(t, `{agents: {defaults: {compaction: {mode: "default", provider: "plug"}}}}`, nil)
	if p.Compaction().Mode != "safeguard" {
		t.Error("a compaction provider must force safeguard mode")
	}
}

func TestCompactionInvalid(t *testing.T) {
	for _, src := range []string{
		`{agents: {defaults: {compaction: {mode: "aggressive"}}}}`,
		`{agents: {defaults: {compaction: {maxActiveTranscriptBytes: "lots"}}}}`,
		`{agents: {defaults: {compaction: {keepRecentTokens: -1}}}}`,
		`{agents: {defaults: {compaction: {memoryFlush: {softThresholdTokens: -5}}}}}`,
		`{agents: {defaults: {compaction: {background: {maxConcurrent: 0}}}}}`,
		`{agents: {defaults: {compaction: {background: {enabled: "yes"}}}}}`,
		`{models: {providers: {p: {baseUrl: "http://x", api: "openai-completions", models: [{id: "m", contextTokens: 0}]}}}}`,
	} {
		_, _, err := Parse("test.json5", []byte(src), nil)
		if err == nil || !strings.Contains(err.Error(), "test.json5:") {
			t.Errorf("Parse(%s) err = %v, want a file:line error", src, err)
		}
	}
}

func TestContextPruningConfig(t *testing.T) {
	if got := mustParse(t, `{}`, nil).ContextPruning(); got.Enabled || got.TTL != 5*time.Minute || !got.HardClear {
		t.Errorf("defaults = %+v", got)
	}
	c := mustParse(t, `{agents: {defaults: {contextPruning: {mode: "cache-ttl", ttl: "1h", tools: {deny: ["exec"]}, hardClear: {enabled: false, placeholder: "x"}}}}}`, nil)
	if got := c.ContextPruning(); !got.Enabled || got.TTL != time.Hour || got.HardClear || got.Deny[0] != "exec" || got.Placeholder != "x" {
		t.Errorf("ContextPruning() = %+v", got)
	}
	for _, src := range []string{
		`{agents: {defaults: {contextPruning: {mode: "always"}}}}`,
		`{agents: {defaults: {contextPruning: {ttl: "soon"}}}}`,
		`{session: {reset: {mode: "weekly"}}}`,
		`{session: {reset: {mode: "daily", atHour: 24}}}`,
		`{session: {resetByType: {dm: {mode: "idle", idleMinutes: 5}}}}`,
	} {
		if _, _, err := Parse("test.json5", []byte(src), nil); err == nil {
			t.Errorf("Parse(%s) accepted", src)
		}
	}
	r := mustParse(t, `{session: {reset: {mode: "daily"}, resetByType: {group: {mode: "idle", idleMinutes: 120}}, resetByChannel: {discord: {mode: "idle", idleMinutes: 10080}}}}`, nil)
	for _, tc := range []struct {
		chatType, channel string
		mode              string
		hour, idle        int
	}{{"direct", "", "daily", 4, 0}, {"group", "", "idle", 4, 120}, {"group", "discord", "idle", 4, 10080}} {
		if m, h, i := r.ResetRule(tc.chatType, tc.channel); m != tc.mode || h != tc.hour || i != tc.idle {
			t.Errorf("ResetRule(%s, %s) = %s %d %d", tc.chatType, tc.channel, m, h, i)
		}
	}
}
