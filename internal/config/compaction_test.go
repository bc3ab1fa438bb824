package config

import (
	"strings"
	"testing"
)

func TestCompactionDefaults(t *testing.T) {
	c := mustParse(t, `{}`, nil)
	got := c.Compaction()
	want := Compaction{Enabled: true, Mode: "safeguard", TimeoutSeconds: 180, KeepRecentTokens: 20000, ReserveTokens: 20000,
		RecentTurnsPreserve: 3, IdentifierPolicy: "strict", QualityGuard: true, QualityMaxRetries: 1}
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
		`{models: {providers: {p: {baseUrl: "http://x", api: "openai-completions", models: [{id: "m", contextTokens: 0}]}}}}`,
	} {
		_, _, err := Parse("test.json5", []byte(src), nil)
		if err == nil || !strings.Contains(err.Error(), "test.json5:") {
			t.Errorf("Parse(%s) err = %v, want a file:line error", src, err)
		}
	}
}
