package avatar

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pngBytes is the start of a PNG: the route serves bytes, it does not
// decode images.
var pngBytes = []byte("\x89PNG\r\n\x1a\nfake")

// world is a workspace per agent, and a directory outside them all.
type world struct {
	agents  map[string]Agent
	outside string
	mux     *http.ServeMux
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{agents: map[string]Agent{}, outside: filepath.Join(root, "outside")}
	os.MkdirAll(w.outside, 0o700)
	os.WriteFile(filepath.Join(w.outside, "face.png"), pngBytes, 0o600)
	add := func(id string, a Agent, files map[string][]byte) {
		a.Known = true
		a.Workspace = filepath.Join(root, id)
		os.MkdirAll(a.Workspace, 0o700)
		for name, b := range files {
			os.WriteFile(filepath.Join(a.Workspace, name), b, 0o600)
		}
		w.agents[id] = a
	}
	add("plain", Agent{}, nil)
	add("local", Agent{Avatar: "face.png"}, map[string][]byte{"face.png": pngBytes})
	add("fromfile", Agent{}, map[string][]byte{
		"IDENTITY.md": []byte("# Identity\n- **Name:** Ada\n- **Avatar:** pic.png\n- **Emoji:** (pick one)\n"),
		"pic.png":     pngBytes,
	})
	add("emoji", Agent{Emoji: "🦊"}, nil)
	add("data", Agent{Avatar: "data:image/png;base64,iVBORw0KGgo="}, nil)
	add("baddata", Agent{Avatar: "data:text/html,<script>x</script>"}, nil)
	add("remote", Agent{Avatar: "https://example.com/a.png"}, nil)
	add("scheme", Agent{Avatar: "file:///etc/passwd"}, nil)
	add("escape", Agent{Avatar: "../outside/face.png"}, nil)
	add("missing", Agent{Avatar: "gone.png"}, nil)
	add("text", Agent{Avatar: "./notes.txt"}, map[string][]byte{"notes.txt": []byte("hi")})
	add("initial", Agent{Avatar: "A"}, nil) // a text avatar: no image
	add("big", Agent{Avatar: "big.png"}, map[string][]byte{"big.png": bytes.Repeat([]byte{1}, MaxBytes+1)})
	add("symlink", Agent{Avatar: "link.png"}, nil)
	os.Symlink(filepath.Join(w.outside, "face.png"), filepath.Join(w.agents["symlink"].Workspace, "link.png"))
	add("hardlink", Agent{Avatar: "hard.png"}, nil)
	os.Link(filepath.Join(w.outside, "face.png"), filepath.Join(w.agents["hardlink"].Workspace, "hard.png"))

	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(rw, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(rw, r)
		})
	}
	w.mux = http.NewServeMux()
	w.mux.Handle("/avatar/{agent}", Handler(func(id string) Agent { return w.agents[id] }, auth))
	return w
}

func (w *world) get(t *testing.T, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("Authorization", "Bearer tok")
	for k, v := range hdr {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	w.mux.ServeHTTP(rec, r)
	return rec
}

func TestImages(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		agent, ctype string
		code         int
		body         []byte // nil: not checked
		contains     string
	}{
		{agent: "plain", code: 200, ctype: "image/svg+xml", contains: "<svg"},
		{agent: "PLAIN", code: 200, ctype: "image/svg+xml", contains: "<svg"},
		{agent: "local", code: 200, ctype: "image/png", body: pngBytes},
		{agent: "fromfile", code: 200, ctype: "image/png", body: pngBytes},
		{agent: "emoji", code: 200, ctype: "image/svg+xml", contains: "🦊"},
		{agent: "data", code: 200, ctype: "image/png", body: []byte("\x89PNG\r\n\x1a\n")},
		{agent: "remote", code: 404},
		{agent: "nobody", code: 404},
		{agent: "bad.id", code: 404},
		// What cannot be served falls back to the generated face.
		{agent: "baddata", code: 200, ctype: "image/svg+xml"},
		{agent: "scheme", code: 200, ctype: "image/svg+xml"},
		{agent: "escape", code: 200, ctype: "image/svg+xml"},
		{agent: "missing", code: 200, ctype: "image/svg+xml"},
		{agent: "text", code: 200, ctype: "image/svg+xml"},
		{agent: "big", code: 200, ctype: "image/svg+xml"},
		{agent: "symlink", code: 200, ctype: "image/svg+xml"},
		{agent: "hardlink", code: 200, ctype: "image/svg+xml"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			rec := w.get(t, http.MethodGet, "/avatar/"+tc.agent, nil)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if rec.Code != 200 {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no nosniff")
			}
			if tc.ctype == "image/svg+xml" && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "sandbox") {
				t.Error("an SVG without a sandboxing CSP")
			}
			if tc.body != nil && !bytes.Equal(rec.Body.Bytes(), tc.body) {
				t.Errorf("body %q, want %q", rec.Body.Bytes(), tc.body)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body %q lacks %q", rec.Body, tc.contains)
			}
		})
	}
}

func TestMeta(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		agent, status, reason, source string
		url                           bool
	}{
		{agent: "plain"},
		{agent: "initial"},
		{agent: "local", status: "local", source: "face.png", url: true},
		{agent: "fromfile", status: "local", source: "pic.png", url: true},
		{agent: "data", status: "data", url: true},
		{agent: "remote", status: "remote", source: "https://example.com/a.png", url: true},
		{agent: "baddata", status: "none", reason: "unsupported_data_url"},
		{agent: "scheme", status: "none", reason: "unsupported_uri", source: "file:///etc/passwd"},
		{agent: "escape", status: "none", reason: "outside_workspace", source: "../outside/face.png"},
		{agent: "symlink", status: "none", reason: "outside_workspace", source: "link.png"},
		{agent: "missing", status: "none", reason: "missing", source: "gone.png"},
		{agent: "text", status: "none", reason: "unsupported_extension", source: "./notes.txt"},
		{agent: "big", status: "none", reason: "too_large", source: "big.png"},
		{agent: "hardlink", status: "none", reason: "unreadable", source: "hard.png"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			rec := w.get(t, http.MethodGet, "/avatar/"+tc.agent+"?meta=1", nil)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var m map[string]*string
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"avatarUrl", "avatarSource", "avatarStatus", "avatarReason"} {
				if _, ok := m[k]; !ok {
					t.Errorf("meta lacks %s (the reference always sends it)", k)
				}
			}
			str := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			if str(m["avatarStatus"]) != tc.status || str(m["avatarReason"]) != tc.reason || str(m["avatarSource"]) != tc.source {
				t.Errorf("meta status %q reason %q source %q, want %q %q %q",
					str(m["avatarStatus"]), str(m["avatarReason"]), str(m["avatarSource"]), tc.status, tc.reason, tc.source)
			}
			if (m["avatarUrl"] != nil) != tc.url {
				t.Errorf("avatarUrl %q", str(m["avatarUrl"]))
			}
		})
	}
}

// TestRevisionFollowsTheImage: the meta URL's cache key changes when the
// image does, so a browser fetches the new one.
func TestRevisionFollowsTheImage(t *testing.T) {
	w := newWorld(t)
	url := func() string {
		var m Meta
		json.Unmarshal(w.get(t, http.MethodGet, "/avatar/local?meta=1", nil).Body.Bytes(), &m)
		return *m.AvatarURL
	}
	before := url()
	if !strings.HasPrefix(before, "/avatar/local?v=") {
		t.Fatalf("avatarUrl %q", before)
	}
	os.WriteFile(filepath.Join(w.agents["local"].Workspace, "face.png"), append(pngBytes, 'x'), 0o600)
	if after := url(); after == before {
		t.Errorf("avatarUrl unchanged (%q) after the image changed", after)
	}
}

func TestDoors(t *testing.T) {
	w := newWorld(t)
	origin := map[string]string{"Origin": "https://ui.example"}
	t.Run("no token", func(t *testing.T) {
		rec := w.get(t, http.MethodGet, "/avatar/plain", map[string]string{"Authorization": "", "Origin": "https://ui.example"})
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", rec.Code)
		}
		if rec.Header().Get("Access-Control-Allow-Origin") != "https://ui.example" {
			t.Error("a 401 without CORS headers: the Control UI cannot read it")
		}
	})
	t.Run("preflight skips the token", func(t *testing.T) {
		rec := w.get(t, http.MethodOptions, "/avatar/plain", map[string]string{"Authorization": "", "Origin": "https://ui.example"})
		if rec.Code != http.StatusNoContent || !strings.Contains(rec.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Fatalf("preflight %d %v", rec.Code, rec.Header())
		}
	})
	t.Run("head", func(t *testing.T) {
		rec := w.get(t, http.MethodHead, "/avatar/local", origin)
		if rec.Code != 200 || rec.Header().Get("Content-Length") != "12" {
			t.Fatalf("HEAD %d, Content-Length %q", rec.Code, rec.Header().Get("Content-Length"))
		}
	})
	t.Run("post", func(t *testing.T) {
		rec := w.get(t, http.MethodPost, "/avatar/plain", origin)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Fatalf("POST %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
		}
	})
}

func TestGeneratedIsStable(t *testing.T) {
	a, b := Generated("main", ""), Generated("main", "")
	if !bytes.Equal(a, b) {
		t.Error("one id, two faces")
	}
	if bytes.Equal(a, Generated("other", "")) {
		t.Error("two ids, one face")
	}
	if got := Generated("x", `<b>`); bytes.Contains(got, []byte("<b>")) {
		t.Errorf("emoji not escaped: %s", got)
	}
}

func TestReadIdentityFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "IDENTITY.md"), []byte("Avatar: `me.png`\n- _Emoji_: 🐙\n- **Avatar:** (workspace-relative path)\n"), 0o600)
	got := readIdentityFile(dir)
	if got.avatar != "me.png" || got.emoji != "🐙" {
		t.Errorf("readIdentityFile = %+v", got)
	}
	if got := readIdentityFile(""); got != (identityFile{}) {
		t.Errorf("no workspace: %+v", got)
	}
}

func FuzzDecodeDataURL(f *testing.F) {
	for _, s := range []string{"data:image/png;base64,iVBORw0KGgo=", "data:image/svg+xml,%3Csvg%3E", "data:text/plain,x", "data:,", "data:image/png;base64,!!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.HasPrefix(s, "data:") {
			return
		}
		body, ctype, err := decodeDataURL(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(ctype, "image/") || len(body) > MaxBytes {
			t.Fatalf("accepted %q: type %q, %d bytes", s, ctype, len(body))
		}
	})
}

func FuzzReadIdentityFile(f *testing.F) {
	f.Add("- **Avatar:** a.png\n- **Emoji:** 🦊\n")
	f.Add("Avatar:\nEmoji: (none)")
	f.Fuzz(func(t *testing.T, content string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "IDENTITY.md"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		id := readIdentityFile(dir)
		for _, v := range []string{id.avatar, id.emoji} {
			if strings.ContainsAny(v, "\n") || (strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")")) {
				t.Fatalf("value %q from %q", v, content)
			}
		}
	})
}
