package agent

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/tokenize"
)

// TestTokensCountedWithTheModelsTokenizer: for a model whose tokenizer is
// public the budget counts with it; for others it keeps the estimate.
func TestTokensCountedWithTheModelsTokenizer(t *testing.T) {
	h := newHarness(t, echo, nil)
	text := strings.Repeat("hello world ", 1000) // 12,000 bytes
	msgs := []provider.Message{{Role: provider.RoleUser, Text: text}}

	gpt := Model{ProviderID: "openai", ModelID: "gpt-4o-mini"}
	want := tokenize.ForModel("gpt-4o-mini").Count(text) + compaction.MessageTokens(&provider.Message{}) // framing
	if got := h.runner.viewTokens(gpt, msgs); got != want {
		t.Errorf("gpt-4o-mini: %d tokens, want %d (o200k_base)", got, want)
	}
	if want > 2100 {
		t.Errorf("o200k_base counts %d tokens in %d bytes of English", want, len(text))
	}
	local := Model{ProviderID: "ollama", ModelID: "llama3.1"}
	if got, est := h.runner.viewTokens(local, msgs), compaction.MessageTokens(&msgs[0]); got != est || est != 3004 {
		t.Errorf("llama3.1: %d tokens, want the estimate %d", got, est)
	}

}
