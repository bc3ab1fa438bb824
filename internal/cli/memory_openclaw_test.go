package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// TestOpenClawMemoryConfig: the reference config names every agent with
// the workspace Switchboard gives it, and memory.search with Switchboard's
// embedding model, or provider "none" when Switchboard searches by
// keywords only; a custom provider's key is copied as written.
func TestOpenClawMemoryConfig(t *testing.T) {
	const mem = `"memory":{"search":{"sources":["memory"],"rememberAcrossConversations":false,`
	main := `"agents":{"ownership":"explicit","defaults":{"systemAgent":{"agentId":"main"}},"entries":{"main":{"workspace":"/s/workspace"}}},`
	for _, tc := range []struct {
		name, config string
		env          map[string]string
		want         string
	}{
		{"defaults: keyword search", `{}`, nil, `{` + main + mem + `"provider":"none"}}}`},
		{"agents and their workspaces",
			`{agents:{list:[{id:"a"},{id:"B",default:true,workspace:"/w/b"}]}}`, nil,
			`{"agents":{"ownership":"explicit","defaults":{"systemAgent":{"agentId":"b"}},"entries":{"a":{"workspace":"/s/workspace-a"},"b":{"workspace":"/w/b"}}},` +
				mem + `"provider":"none"}}}`},
		{"shared default workspace", `{agents:{defaults:{workspace:"~/ws"},list:[{id:"main"},{id:"ops"}]}}`, nil,
			`{"agents":{"ownership":"explicit","defaults":{"systemAgent":{"agentId":"main"}},"entries":{"main":{"workspace":"/h/ws"},"ops":{"workspace":"/h/ws"}}},` +
				mem + `"provider":"none"}}}`},
		{"disabled", `{memory:{search:{enabled:false}}}`, map[string]string{"OPENAI_API_KEY": "sk-x"},
			`{` + main + mem + `"enabled":false,"provider":"none"}}}`},
		{"openai from the environment", `{}`, map[string]string{"OPENAI_API_KEY": "sk-x"},
			`{` + main + mem + `"provider":"openai","model":"text-embedding-3-small"}}}`},
		{"custom provider", `{memory:{search:{provider:"emb",model:"m1"}},
			models:{providers:{emb:{baseUrl:"http://127.0.0.1:9/v1",apiKey:"${EMB_KEY}",api:"openai-completions"}}}}`,
			map[string]string{"EMB_KEY": "secret-value"},
			`{` + main + mem + `"provider":"emb","model":"m1"}},` +
				`"models":{"providers":{"emb":{"baseUrl":"http://127.0.0.1:9/v1","apiKey":"${EMB_KEY}","api":"openai-completions","models":[{"id":"m1","name":"m1"}]}}}}`},
		{"provider without embeddings", `{memory:{search:{provider:"claude",model:"m"}},
			models:{providers:{claude:{baseUrl:"http://127.0.0.1:9",apiKey:"k",api:"anthropic-messages"}}}}`, nil,
			`{` + main + mem + `"provider":"none"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SWITCHBOARD_STATE_DIR": "/s", "HOME": "/h"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, _, err := config.Parse("test.json5", []byte(tc.config), config.MapEnv(env))
			if err != nil {
				t.Fatal(err)
			}
			set := settings.Resolve(cfg)
			doc, err := openclawMemoryConfig(set, registry.New(set).EmbedReady())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(doc)
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatalf("want: %v", err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if strings.Contains(string(got), "secret-value") || strings.Contains(string(got), "sk-x") {
				t.Errorf("a resolved secret is in the file: %s", got)
			}
		})
	}
}

// TestMemoryOpenClawEnv: the command writes the config beside a state dir
// of the reference's own (mode 0600) and prints the environment shell-quoted.
func TestMemoryOpenClawEnv(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir})
	var out strings.Builder
	if err := Run(t.Context(), []string{"memory", "openclaw-env"}, Options{Env: env, Stdout: &out, Stderr: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	q := strings.ReplaceAll(dir, "'", `'\''`)
	want := "export OPENCLAW_STATE_DIR='" + q + "/openclaw'\nexport OPENCLAW_CONFIG_PATH='" + q + "/openclaw/openclaw.json'\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("output:\n%s\nwant it to start with:\n%s", out.String(), want)
	}
	st, err := os.Stat(filepath.Join(dir, "openclaw", "openclaw.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("openclaw.json: %v %v", st, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte("{ agents: "), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Run(t.Context(), []string{"memory", "openclaw-env"}, Options{Env: env, Stdout: &out, Stderr: &out}); err == nil ||
		!strings.Contains(err.Error(), "memory openclaw-env") {
		t.Errorf("a broken config: %v", err)
	}
}
