package webui

import (
	"bytes"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestHandler(t *testing.T) {
	h := Handler()
	get := func(path string) *http.Response {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Result()
	}
	tests := []struct {
		path, ctype, contains string
		status                int
	}{
		{"/", "text/html", `<script type="module" src="/ui/app.js">`, 200},
		{"/ui/app.js", "text/javascript", "chat.send", 200},
		{"/ui/render.js", "text/javascript", "export function renderMarkdown", 200},
		{"/ui/style.css", "text/css", "--accent", 200},
		{"/ui/nope.js", "", "", 404},
		{"/ui/../webui.go", "", "", 404},
		{"/elsewhere", "", "", 404},
	}
	for _, tt := range tests {
		resp := get(tt.path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.status {
			t.Errorf("%s: status %d", tt.path, resp.StatusCode)
			continue
		}
		if tt.status != 200 {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.ctype) {
			t.Errorf("%s: Content-Type %q", tt.path, ct)
		}
		if !strings.Contains(string(body), tt.contains) {
			t.Errorf("%s: body lacks %q", tt.path, tt.contains)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", tt.path, csp)
		}
	}
}

// /favicon.ico is an ICO holding a 32×32 PNG.
func TestFavicon(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/favicon.ico", nil))
	b := rec.Body.Bytes()
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/x-icon" || len(b) < 22 {
		t.Fatalf("favicon: %d %q, %d bytes", rec.Code, rec.Header().Get("Content-Type"), len(b))
	}
	if !bytes.Equal(b[:6], []byte{0, 0, 1, 0, 1, 0}) || b[6] != 32 || b[7] != 32 {
		t.Errorf("ICO header % x", b[:8])
	}
	img, err := png.Decode(bytes.NewReader(b[22:]))
	if err != nil || img.Bounds().Dx() != 32 {
		t.Errorf("the icon's PNG: %v", err)
	}
}

// The page never builds HTML from strings: model text must stay text.
func TestNoHTMLSinks(t *testing.T) {
	for _, name := range []string{"static/app.js", "static/render.js"} {
		b, err := static.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(string(b), sink) {
				t.Errorf("%s uses %s", name, sink)
			}
		}
	}
}

func BenchmarkIndex(b *testing.B) {
	h := Handler()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	}
}

func TestConfigHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	ConfigHandler("1.2.3", true).ServeHTTP(rec, httptest.NewRequest("GET", "/control-ui-config.json", nil))
	body := rec.Body.String()
	for _, want := range []string{`"basePath":""`, `"serverVersion":"1.2.3"`, `"pluginAssetsRequireAuth":true`, `"pluginFrameGrants":[]`} {
		if !strings.Contains(body, want) {
			t.Errorf("config lacks %s: %s", want, body)
		}
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
}

// Every form with a password field also has a username field (hidden),
// as browsers ask of password forms: without one, Chrome logs "Password
// forms should have (optionally hidden) username fields" on every load
// of the page, and password managers cannot file the token.
func TestPasswordFormsHaveAUsername(t *testing.T) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	attr := func(n *html.Node, key string) string {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val
			}
		}
		return ""
	}
	forms := 0
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "form" {
			continue
		}
		var password, username bool
		for d := range n.Descendants() {
			if d.Type == html.ElementNode && d.Data == "input" {
				password = password || attr(d, "type") == "password"
				username = username || attr(d, "autocomplete") == "username"
			}
		}
		if password {
			forms++
			if !username {
				t.Errorf("form #%s has a password field and no username field", attr(n, "id"))
			}
		}
	}
	if forms == 0 {
		t.Error("index.html has no password form (the login form's token field)")
	}
}
