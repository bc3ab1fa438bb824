package daemon

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
)

// TestAvatarRoute: GET /avatar/<agent> on the real gateway serves each
// agent's identity image (a workspace file, IDENTITY.md's, a data: URI),
// a generated face when there is none or it cannot be served, the
// reference's metadata object for ?meta=1, only with the gateway token,
// with CORS headers for an admitted origin (preflight too), and refuses
// path tricks: files outside the workspace, through a symlink, with a
// second hard link, of another type, and ids that are not one plain
// segment.
func TestAvatarRoute(t *testing.T) {
	const tok = "avatar-token"
	const origin = "http://ui.example:5173"
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	secret := filepath.Join(dir, "secret.png")
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(secret, []byte("outside the workspace"))
	ws := func(id string) string { return filepath.Join(dir, "ws-"+id) }
	write(filepath.Join(ws("local"), "avatars", "me.png"), png)
	write(filepath.Join(ws("file"), "IDENTITY.md"), []byte("# IDENTITY.md\n\n- **Name:** Filed\n- **Avatar:** pics/face.png\n- **Emoji:**\n  _(your signature)_\n"))
	write(filepath.Join(ws("file"), "pics", "face.png"), png)
	write(filepath.Join(ws("txt"), "docs", "notes.txt"), []byte("text"))
	write(filepath.Join(ws("linked"), "placeholder"), nil)
	if err := os.Symlink(secret, filepath.Join(ws("linked"), "face.png")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(ws("hard"), "placeholder"), nil)
	if err := os.Link(secret, filepath.Join(ws("hard"), "face.png")); err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	agent := func(id, identity string) string {
		return fmt.Sprintf(`{ id: %q, workspace: %q, identity: %s }`, id, ws(id), identity)
	}
	cfg := fmt.Sprintf(`{ gateway: { auth: { mode: "token", token: %q }, controlUi: { allowedOrigins: [%q] } },
  agents: { list: [ %s ] } }`, tok, origin, strings.Join([]string{
		agent("main", `{}`),
		agent("local", `{ avatar: "avatars/me.png" }`),
		agent("file", `{}`),
		agent("data", fmt.Sprintf(`{ avatar: %q }`, dataURL)),
		agent("emoji", `{ emoji: "🦥" }`),
		agent("remote", `{ avatar: "https://example.com/a.png" }`),
		agent("outside", fmt.Sprintf(`{ avatar: %q }`, "../secret.png")),
		agent("absolute", fmt.Sprintf(`{ avatar: %q }`, secret)),
		agent("linked", `{ avatar: "face.png" }`),
		agent("hard", `{ avatar: "face.png" }`),
		agent("txt", `{ avatar: "docs/notes.txt" }`),
		agent("missing", `{ avatar: "nope.png" }`),
		agent("scheme", `{ avatar: "file:///etc/passwd" }`),
	}, ", "))
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	d, err := Start(context.Background(), Options{Env: config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port: &port, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	base := "http://" + d.Addrs[0].String()
	do := func(method, path string, auth bool, hdr map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	svg := func(b []byte) bool { return strings.HasPrefix(string(b), "<svg ") }

	t.Run("images", func(t *testing.T) {
		for _, tt := range []struct {
			agent, ctype string
			png          bool // the workspace image; else a generated face
		}{
			{"main", "image/svg+xml", false},
			{"local", "image/png", true},
			{"LOCAL", "image/png", true},
			{"file", "image/png", true},
			{"data", "image/png", true},
			{"emoji", "image/svg+xml", false},
			{"outside", "image/svg+xml", false},
			{"absolute", "image/svg+xml", false},
			{"linked", "image/svg+xml", false},
			{"hard", "image/svg+xml", false},
			{"txt", "image/svg+xml", false},
			{"missing", "image/svg+xml", false},
			{"scheme", "image/svg+xml", false},
		} {
			resp, b := do("GET", "/avatar/"+tt.agent, true, nil)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("%s: %d %s %q", tt.agent, resp.StatusCode, resp.Header.Get("Content-Type"), b)
				continue
			}
			if tt.png && string(b) != string(png) || !tt.png && !svg(b) {
				t.Errorf("%s: body %q", tt.agent, b)
			}
			if strings.Contains(string(b), "outside the workspace") {
				t.Errorf("%s: served the file outside the workspace", tt.agent)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: headers %v", tt.agent, resp.Header)
			}
		}
		if _, b := do("GET", "/avatar/emoji", true, nil); !strings.Contains(string(b), "🦥") {
			t.Errorf("the emoji agent's face %q lacks its emoji", b)
		}
		if _, a := do("GET", "/avatar/main", true, nil); svg(a) {
			if _, b := do("GET", "/avatar/outside", true, nil); string(a) == string(b) {
				t.Error("two agents got the same generated face")
			}
		}
		if resp, b := do("HEAD", "/avatar/local", true, nil); resp.StatusCode != http.StatusOK || len(b) != 0 || resp.ContentLength != int64(len(png)) {
			t.Errorf("HEAD: %d, %d bytes, length %d", resp.StatusCode, len(b), resp.ContentLength)
		}
	})

	t.Run("meta", func(t *testing.T) {
		for _, tt := range []struct{ agent, want string }{
			{"main", `{"avatarUrl":null,"avatarSource":null,"avatarStatus":null,"avatarReason":null}`},
			{"local", `{"avatarUrl":"/avatar/local?v=*","avatarSource":"avatars/me.png","avatarStatus":"local","avatarReason":null}`},
			{"data", `{"avatarUrl":"/avatar/data?v=*","avatarSource":null,"avatarStatus":"data","avatarReason":null}`},
			{"remote", `{"avatarUrl":"https://example.com/a.png","avatarSource":"https://example.com/a.png","avatarStatus":"remote","avatarReason":null}`},
			{"outside", `{"avatarUrl":null,"avatarSource":"../secret.png","avatarStatus":"none","avatarReason":"outside_workspace"}`},
			{"linked", `{"avatarUrl":null,"avatarSource":"face.png","avatarStatus":"none","avatarReason":"outside_workspace"}`},
			{"hard", `{"avatarUrl":null,"avatarSource":"face.png","avatarStatus":"none","avatarReason":"unreadable"}`},
			{"txt", `{"avatarUrl":null,"avatarSource":"docs/notes.txt","avatarStatus":"none","avatarReason":"unsupported_extension"}`},
			{"missing", `{"avatarUrl":null,"avatarSource":"nope.png","avatarStatus":"none","avatarReason":"missing"}`},
			{"scheme", `{"avatarUrl":null,"avatarSource":"file:///etc/passwd","avatarStatus":"none","avatarReason":"unsupported_uri"}`},
		} {
			resp, b := do("GET", "/avatar/"+tt.agent+"?meta=1", true, nil)
			got := strings.TrimSpace(string(b))
			if i := strings.Index(got, "?v="); i >= 0 { // the revision is opaque
				j := strings.IndexByte(got[i:], '"')
				got = got[:i] + "?v=*" + got[i+j:]
			}
			if resp.StatusCode != http.StatusOK || got != tt.want || !json.Valid(b) {
				t.Errorf("%s meta: %d %s\nwant %s", tt.agent, resp.StatusCode, got, tt.want)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, tt := range []struct {
			path string
			auth bool
			want int
		}{
			{"/avatar/local", false, http.StatusUnauthorized},
			{"/avatar/local?meta=1", false, http.StatusUnauthorized},
			{"/avatar/nobody", true, http.StatusNotFound},
			{"/avatar/remote", true, http.StatusNotFound}, // the browser loads the URL itself
			{"/avatar/..%2fsecret.png", true, http.StatusNotFound},
			{"/avatar/%2e%2e", true, http.StatusNotFound},
			{"/avatar/main%2f..%2f..%2fsecret.png", true, http.StatusNotFound},
			{"/avatar/a.b", true, http.StatusNotFound},
			{"/avatar/main/extra", true, http.StatusNotFound},
		} {
			resp, b := do("GET", tt.path, tt.auth, nil)
			if resp.StatusCode != tt.want || strings.Contains(string(b), "outside the workspace") {
				t.Errorf("%s (auth %v): %d %q; want %d", tt.path, tt.auth, resp.StatusCode, b, tt.want)
			}
		}
		if resp, _ := do("POST", "/avatar/main", true, map[string]string{"Content-Type": "application/json"}); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST: %d", resp.StatusCode)
		}
	})

	t.Run("cors", func(t *testing.T) {
		resp, _ := do("OPTIONS", "/avatar/local", false, map[string]string{"Origin": origin,
			"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"})
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != origin || h.Get("Access-Control-Allow-Credentials") != "true" ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "GET") {
			t.Errorf("preflight: %d %v", resp.StatusCode, h)
		}
		for _, auth := range []bool{true, false} {
			resp, _ := do("GET", "/avatar/local", auth, map[string]string{"Origin": origin})
			if resp.Header.Get("Access-Control-Allow-Origin") != origin || resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
				t.Errorf("GET (auth %v): %d without CORS: %v", auth, resp.StatusCode, resp.Header)
			}
		}
		if resp, _ := do("GET", "/avatar/local", true, map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != http.StatusForbidden ||
			resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("foreign origin: %d %v", resp.StatusCode, resp.Header)
		}
	})
}
