package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Secrets given only through token and password files, or only through
// the environment, are secret values too: the masker learns them as the
// connectors read them (issue 30).
func TestSecretValuesReadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tg := write("tg", "123456:tg-file-token\nsecond line\n")
	irc := write("irc", "  irc-file-password  \n")
	ns := write("ns", "nickserv-file-password")
	c := mustParse(t, `{ channels: {
  telegram: { tokenFile: "`+tg+`", webhookSecret: "wh-secret" },
  irc: { host: "irc.example", nick: "sb", passwordFile: "`+irc+`", nickserv: { passwordFile: "`+ns+`" } } } }`, nil)
	got := c.SecretValues()
	for _, want := range []string{"123456:tg-file-token", "irc-file-password", "nickserv-file-password", "wh-secret"} {
		if !slices.Contains(got, want) {
			t.Errorf("secret values %q lack %q", got, want)
		}
	}
	for _, v := range got {
		if strings.Contains(v, "second line") || strings.TrimSpace(v) != v {
			t.Errorf("secret value %q is not the file's first line, trimmed", v)
		}
	}
	env := testEnv(map[string]string{"TELEGRAM_BOT_TOKEN": "tg-env-token", "IRC_PASSWORD": "irc-env-password", "IRC_NICKSERV_PASSWORD": "ns-env-password"})
	c = mustParse(t, `{ channels: { telegram: {}, irc: { host: "irc.example", nick: "sb" } } }`, env)
	got = c.SecretValues()
	for _, want := range []string{"tg-env-token", "irc-env-password", "ns-env-password"} {
		if !slices.Contains(got, want) {
			t.Errorf("secret values %q lack %q", got, want)
		}
	}
	// A file that cannot be read adds nothing (the connector reports it).
	c = mustParse(t, `{ channels: { telegram: { tokenFile: "`+filepath.Join(dir, "missing")+`" } } }`, nil)
	if got := c.SecretValues(); len(got) != 0 {
		t.Errorf("secret values with a missing file = %q", got)
	}
}
