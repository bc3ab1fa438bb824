package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// TestUnresolvedModelSaysOnlyTheFix: a model that cannot run fails with the
// cause and the fix, as the README shows it, with no sentinel text after
// the fix, and still matches provider.ErrUnknownModel.
func TestUnresolvedModelSaysOnlyTheFix(t *testing.T) {
	cfg, _, err := config.Parse("test.json5", []byte(`{}`), config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": "/s", "HOME": "/h"}))
	if err != nil {
		t.Fatal(err)
	}
	mods := registry.New(settings.Resolve(cfg))
	for _, tc := range []struct{ ref, want string }{
		{"openai/gpt-4.1-mini", "no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey"},
		{"anthropic/claude-sonnet-4-5", "no API key for provider anthropic: set ANTHROPIC_API_KEY or models.providers.anthropic.apiKey"},
		{"nope/x", `unknown model provider "nope" in "nope/x" (configure it under models.providers, or use scripted/echo-1 offline)`},
		{"justamodel", `invalid model "justamodel" (want "<provider>/<model>")`},
	} {
		_, err := mods.ResolveModel("main", tc.ref)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ResolveModel(%q) = %v, want %q", tc.ref, err, tc.want)
		}
		if !errors.Is(err, provider.ErrUnknownModel) {
			t.Errorf("ResolveModel(%q) = %v, want it to match provider.ErrUnknownModel", tc.ref, err)
		}
		if err != nil && strings.HasSuffix(err.Error(), provider.ErrUnknownModel.Error()) {
			t.Errorf("ResolveModel(%q) = %q: ends in the sentinel's text", tc.ref, err)
		}
	}
}
