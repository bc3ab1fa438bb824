// Package webui owns Switchboard's browser UI: a single page, embedded in
// the binary and served with no build step, that speaks the gateway's
// WebSocket protocol like any other client (a control UI) to chat with
// sessions, list them, and watch a session's family of sub-agents and
// announces live.
package webui

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is where the UI's assets are served; the page itself is "/".
const Prefix = "/ui/"

// securityHeaders keep the page to its own scripts and the gateway: no
// inline script, no framing, no referrer (the token lives in the URL
// fragment on the first load).
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
	"Cache-Control":          "no-cache",
}

// Handler serves the page at "/" and its assets under Prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if r.URL.Path == "/" || r.URL.Path == "/index.html" {
			http.ServeFileFS(w, r, sub, "index.html")
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok || name == "" || strings.Contains(name, "..") {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

// ControlUIConfig is what the reference's Control UI (npm openclaw,
// dist/control-ui) loads from /control-ui-config.json before it connects;
// Switchboard serves the members it has a value for, so that UI can be
// pointed at this gateway. No secret is in it.
type ControlUIConfig struct {
	BasePath                   string   `json:"basePath"`
	AssistantName              string   `json:"assistantName"`
	AssistantAvatar            *string  `json:"assistantAvatar"`
	ServerVersion              string   `json:"serverVersion"`
	EmbedSandbox               string   `json:"embedSandbox"`
	AllowExternalEmbedUrls     bool     `json:"allowExternalEmbedUrls"`
	AutomaticallyFetchFavicons bool     `json:"automaticallyFetchFavicons"`
	CommunityInvite            bool     `json:"communityInvite"`
	TerminalEnabled            bool     `json:"terminalEnabled"`
	CLIAgentsEnabled           bool     `json:"cliAgentsEnabled"`
	PluginAssetsRequireAuth    bool     `json:"pluginAssetsRequireAuth"`
	PluginFrameGrants          []string `json:"pluginFrameGrants"`
}

// ControlUIConfigPaths are where the reference's Control UI looks for it.
var ControlUIConfigPaths = []string{"/control-ui-config.json", "/__openclaw/control-ui-config.json", "/__openclaw__/control-ui-config.json"}

// ConfigHandler serves ControlUIConfig for a gateway of this version;
// authRequired says whether the gateway asks for a token or password.
func ConfigHandler(version string, authRequired bool) http.Handler {
	cfg := ControlUIConfig{
		AssistantName: "Switchboard", ServerVersion: version, EmbedSandbox: "scripts",
		AutomaticallyFetchFavicons: true, PluginAssetsRequireAuth: authRequired, PluginFrameGrants: []string{},
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		panic(err) // a fixed struct
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Write(body)
	})
}
