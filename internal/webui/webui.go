// Package webui owns Switchboard's browser UI: a single page, embedded in
// the binary and served with no build step, that speaks the gateway's
// WebSocket protocol like any other client (a control UI) to chat with
// sessions, list them, and watch a session's family of sub-agents and
// announces live.
package webui

import (
	"bytes"
	"embed"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

//go:embed static
var static embed.FS

// Prefix is where the UI's assets are served; the page itself is "/".
const Prefix = "/ui/"

// securityHeaders keep the page to its own scripts and the gateway: no
// inline script, no framing, no referrer (the token lives in the URL
// fragment on the first load).
var securityHeaders = [...][2]string{
	{"Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "no-referrer"},
	{"Cache-Control", "no-cache"},
}

// Handler serves the page at "/" and its assets under Prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range securityHeaders {
			w.Header().Set(h[0], h[1])
		}
		if r.URL.Path == "/favicon.ico" {
			w.Header().Set("Content-Type", "image/x-icon")
			w.Write(favicon())
			return
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

// favicon is the page's icon (what browsers ask /favicon.ico for): an ICO
// file holding one 32×32 PNG, the UI's accent colour with a light bar
// across, like a switchboard's plug row. It is drawn on the first request
// for it: encoding the PNG at init allocated 0.8 MB in every process.
func favicon() []byte { return faviconValue.Get() }

// faviconValue is built on the first call of favicon.
var faviconValue = lazy.Value[[]byte]{New: makeFavicon}

func makeFavicon() []byte {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	accent, light := color.NRGBA{0x5b, 0x9d, 0xff, 0xff}, color.NRGBA{0xe6, 0xe8, 0xee, 0xff}
	for y := range n {
		for x := range n {
			corner := (x < 3 || x > n-4) && (y < 3 || y > n-4) // rounded-ish corners stay clear
			switch {
			case corner:
			case y >= 14 && y < 18 && x >= 6 && x < n-6:
				img.SetNRGBA(x, y, light)
			default:
				img.SetNRGBA(x, y, accent)
			}
		}
	}
	var pngData bytes.Buffer
	if err := png.Encode(&pngData, img); err != nil {
		panic(err) // an in-memory image of fixed size
	}
	var b bytes.Buffer
	// ICONDIR: reserved, type 1 (icon), one image; then its ICONDIRENTRY:
	// 32×32, no palette, 1 plane, 32 bits, the PNG's size and offset (22).
	binary.Write(&b, binary.LittleEndian, [3]uint16{0, 1, 1})
	b.Write([]byte{n, n, 0, 0})
	binary.Write(&b, binary.LittleEndian, [2]uint16{1, 32})
	binary.Write(&b, binary.LittleEndian, [2]uint32{uint32(pngData.Len()), 22})
	b.Write(pngData.Bytes())
	return b.Bytes()
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
