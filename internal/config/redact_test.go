package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRedaction(t *testing.T) {
	secrets := []string{
		"sk-file-key-111", "header-secret-222", "gateway-token-333", "gateway-password-444",
		"sk-env-openai-555", "sk-env-anthropic-666", "env-token-777", "env-password-888", "ref-secret-999",
	}
	src := `{
  models: { providers: {
    p: { baseUrl: "http://h/v1", apiKey: "sk-file-key-111", headers: { Authorization: "Bearer header-secret-222" } },
    r: { baseUrl: "http://h/v1", apiKey: "${REF_KEY}" },
  } },
  gateway: { auth: { mode: "token", token: "gateway-token-333", password: "gateway-password-444" } },
}`
	env := testEnv(map[string]string{
		EnvOpenAIKey: "sk-env-openai-555", EnvAnthropicKey: "sk-env-anthropic-666",
		EnvGatewayToken: "env-token-777", EnvGatewayPassword: "env-password-888", "REF_KEY": "ref-secret-999",
	})
	c := mustParse(t, src, env)
	r := c.Redacted()

	var log strings.Builder
	slog.New(slog.NewTextHandler(&log, nil)).Info("config", "cfg", c, "auth", c.GatewayAuth(), "openai", must(c.Provider("openai")))
	shown := map[string]string{
		"String":              c.String(),
		"value %v":            fmt.Sprintf("%v", *c),
		"pointer %+v":         fmt.Sprintf("%+v", c),
		"%#v":                 fmt.Sprintf("%#v", c),
		"GatewayAuth":         fmt.Sprintf("%v %+v %#v", c.GatewayAuth(), c.GatewayAuth(), c.GatewayAuth()),
		"Provider":            fmt.Sprintf("%v %+v %#v", must(c.Provider("p")), must(c.Provider("r")), must(c.Provider("openai"))),
		"Providers":           fmt.Sprint(c.Providers()),
		"slog":                log.String(),
		"redacted accessors":  fmt.Sprint(r.GatewayAuth().Token, r.GatewayAuth().Password, r.Providers()),
		"redacted provider p": must(r.Provider("p")).APIKey + must(r.Provider("r")).APIKey + must(r.Provider("p")).Headers["Authorization"],
	}
	for name, text := range shown {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows secret %q:\n%s", name, s, text)
			}
		}
	}
	if !strings.Contains(c.String(), `"apiKey": "${REF_KEY}"`) {
		t.Errorf("String hides a plain ${ENV} reference:\n%s", c)
	}

	// The original keeps its secrets and Redacted shares no state with it.
	if got := must(c.Provider("p")).APIKey; got != "sk-file-key-111" {
		t.Errorf("original apiKey = %q", got)
	}
	if got := c.GatewayAuth().Token; got != "env-token-777" {
		t.Errorf("original token = %q", got)
	}
	r.Models.Providers["p"].BaseURL = "changed"
	if c.Models.Providers["p"].BaseURL != "http://h/v1" {
		t.Error("Redacted shares providers with the original")
	}
}

func TestCloneRoundTrip(t *testing.T) {
	c, _, err := LoadEnv("testdata/openclaw.json5", testEnv(map[string]string{EnvOpenAIKey: "k"}))
	if err != nil {
		t.Fatal(err)
	}
	d := c.clone()
	if diff := cmp.Diff(c, d, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("clone differs (-orig +clone):\n%s", diff)
	}
	if d.file != c.file || d.src != c.src || d.paths != c.paths {
		t.Error("clone lost the source information")
	}
}
