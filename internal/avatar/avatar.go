// Package avatar serves GET /avatar/<agentId>, the agent avatar route of
// the reference's Control UI: the image named by the agent's identity
// (agents.list[].identity.avatar, else the "Avatar:" line of the
// workspace's IDENTITY.md) when it is a local image file inside the
// agent's workspace or a data: image URI, else a face generated from the
// agent id (showing the identity's emoji when it has one), so every known
// agent has an image. "?meta=1" answers the reference's metadata object
// ({avatarUrl, avatarSource, avatarStatus, avatarReason}).
//
// The route sits behind the gateway's bearer check, like the rest of the
// API; its answers (401s included) and CORS preflights carry the CORS
// headers for the request's Origin, which the gateway's doors admitted
// already, so a Control UI served from another allowed origin can fetch
// it. Path tricks are refused: the agent id is one plain segment, the
// image must resolve (symlinks followed) inside the workspace, be a
// regular file with one link, an image extension and at most 2 MiB.
package avatar

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/tools/files"
)

// MaxBytes is the largest avatar image served (the reference's limit).
const MaxBytes = 2 << 20

// Agent is what the route needs to know of one agent.
type Agent struct {
	// Known: the agent is configured (or the default agent).
	Known bool
	// Workspace is the agent's workspace directory.
	Workspace string
	// Avatar and Emoji are the configured identity's (config first; the
	// handler reads IDENTITY.md for what they leave unset).
	Avatar, Emoji string
}

// Resolver returns agent id's settings (id as normalised by the route:
// lower case).
type Resolver func(id string) Agent

// Handler returns the route's handler. auth wraps the image and metadata
// answers (the gateway's bearer check); preflights skip it.
func Handler(resolve Resolver, auth func(http.Handler) http.Handler) http.Handler {
	serve := auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveAvatar(w, r, resolve) }))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if origin := r.Header.Get("Origin"); origin != "" {
			// The doors refused every origin the gateway does not admit.
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
		}
		switch r.Method {
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet, http.MethodHead:
			serve.ServeHTTP(w, r)
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// agentID is a plain agent id segment (the reference's path rule).
func agentID() *regexp.Regexp { return agentIDValue.Get() }

// agentIDValue is built on the first call of agentID.
var agentIDValue = lazy.Value[*regexp.Regexp]{New: buildAgentID}

// buildAgentID builds agentID's value.
func buildAgentID() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) }

// Meta is the "?meta=1" answer, in the reference's shape.
type Meta struct {
	AvatarURL    *string `json:"avatarUrl"`
	AvatarSource *string `json:"avatarSource"`
	AvatarStatus *string `json:"avatarStatus"`
	AvatarReason *string `json:"avatarReason"`
}

func serveAvatar(w http.ResponseWriter, r *http.Request, resolve Resolver) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	id := strings.ToLower(r.PathValue("agent"))
	if !agentID().MatchString(id) {
		http.NotFound(w, r)
		return
	}
	a := resolve(id)
	if !a.Known {
		http.NotFound(w, r)
		return
	}
	file := readIdentityFile(a.Workspace)
	source := firstNonEmpty(a.Avatar, file.avatar)
	emoji := firstNonEmpty(emojiOf(a.Emoji), emojiOf(file.emoji), emojiOf(a.Avatar), emojiOf(file.avatar))
	img := load(a.Workspace, source)
	if r.URL.Query().Get("meta") == "1" {
		writeJSON(w, img.meta(id))
		return
	}
	if img.kind == kindRemote {
		// The reference answers a remote avatar's image request with 404:
		// the browser loads the URL itself (meta's avatarUrl).
		http.NotFound(w, r)
		return
	}
	body, ctype := img.body, img.ctype
	if body == nil {
		body, ctype = Generated(id, emoji), "image/svg+xml"
	}
	if ctype == "image/svg+xml" {
		// An SVG opened on its own runs nothing and loads nothing.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	}
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache")
	h.Add("Vary", "Authorization")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body) // HEAD: net/http drops the body
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_ = json.NewEncoder(w).Encode(v)
}

// Kinds of avatar sources (the reference's avatarStatus values).
const (
	kindNone   = "none"
	kindLocal  = "local"
	kindData   = "data"
	kindRemote = "remote"
)

// image is an identity's avatar source as loaded: kind "" when there is
// none, kindNone with a reason when it cannot be served.
type image struct {
	kind, source, reason string
	body                 []byte
	ctype                string
}

func (img image) meta(id string) Meta {
	str := func(s string) *string { return &s }
	var m Meta
	if img.kind == "" {
		return m
	}
	m.AvatarStatus = str(img.kind)
	switch img.kind {
	case kindNone:
		m.AvatarReason = str(img.reason)
		if !strings.HasPrefix(img.source, "data:") {
			m.AvatarSource = str(img.source)
		}
	case kindLocal:
		m.AvatarSource = str(img.source)
		m.AvatarURL = str("/avatar/" + url.PathEscape(id) + "?v=" + revision(img.body))
	case kindData:
		m.AvatarURL = str("/avatar/" + url.PathEscape(id) + "?v=" + revision(img.body))
	case kindRemote:
		m.AvatarSource, m.AvatarURL = str(img.source), str(img.source)
	}
	return m
}

// revision is an opaque cache key of an image's bytes.
func revision(b []byte) string {
	f := fnv.New64a()
	_, _ = f.Write(b)
	return strconv.FormatUint(f.Sum64(), 36)
}

// The source classes, compiled on first use (no work at init).
var (
	httpURL   = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`(?i)^https?://`) }}
	uriScheme = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`(?i)^[a-z][a-z0-9+.-]*:`) }}
	imagePath = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`(?i)\.(png|jpe?g|gif|webp|svg|ico)$`) }}
)

// mimeByExt are the local image types served, by extension.
func mimeByExt(ext string) (string, bool) {
	switch ext {
	case ".png":
		return "image/png", true
	case ".jpg", ".jpeg":
		return "image/jpeg", true
	case ".gif":
		return "image/gif", true
	case ".webp":
		return "image/webp", true
	case ".svg":
		return "image/svg+xml", true
	}
	return "", false
}

// load classifies and reads source ("" : no image) for an agent whose
// workspace is workspace.
func load(workspace, source string) image {
	switch {
	case source == "":
		return image{}
	case httpURL.Get().MatchString(source):
		return image{kind: kindRemote, source: source}
	case strings.HasPrefix(strings.ToLower(source), "data:"):
		body, ctype, err := decodeDataURL(source)
		if err != nil {
			return image{kind: kindNone, source: source, reason: "unsupported_data_url"}
		}
		return image{kind: kindData, source: source, body: body, ctype: ctype}
	case uriScheme.Get().MatchString(source):
		return image{kind: kindNone, source: source, reason: "unsupported_uri"}
	case !strings.ContainsAny(source, `/\`) && !imagePath.Get().MatchString(source):
		return image{} // a short text avatar ("A", an emoji): no image
	}
	body, ctype, reason := readLocal(workspace, source)
	if reason != "" {
		return image{kind: kindNone, source: source, reason: reason}
	}
	return image{kind: kindLocal, source: source, body: body, ctype: ctype}
}

// readLocal reads the image at source (relative to workspace, absolute or
// "~/"-relative), refusing anything that resolves outside the workspace,
// is not a regular file with one link, has another extension or is over
// MaxBytes. reason is the reference's avatarReason when it cannot.
func readLocal(workspace, source string) (body []byte, ctype, reason string) {
	if workspace == "" {
		return nil, "", "missing"
	}
	p := source
	switch {
	case strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, "", "missing"
		}
		p = filepath.Join(home, p[2:])
	case !filepath.IsAbs(p):
		p = filepath.Join(workspace, p)
	}
	root, real := realOrClean(workspace), realOrClean(p)
	if !lexicallyInside(root, real) {
		return nil, "", "outside_workspace"
	}
	ctype, ok := mimeByExt(strings.ToLower(filepath.Ext(real)))
	if !ok {
		return nil, "", "unsupported_extension"
	}
	f, err := os.Open(real)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", "missing"
	}
	if err != nil {
		return nil, "", "unreadable"
	}
	defer f.Close()
	if opened, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil && !lexicallyInside(root, opened) {
		// A link swapped in between the check and the open.
		return nil, "", "outside_workspace"
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, "", "unreadable"
	case !fi.Mode().IsRegular():
		return nil, "", "missing"
	case fi.Size() > MaxBytes:
		return nil, "", "too_large"
	case files.RefuseHardLinks("serve", source, fi) != nil:
		return nil, "", "unreadable" // another link may lie outside
	}
	body, err = io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil || len(body) > MaxBytes {
		return nil, "", "unreadable"
	}
	return body, ctype, ""
}

// realOrClean is p with its symlinks resolved, or cleaned when it does
// not exist.
func realOrClean(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// lexicallyInside reports whether path p is root or below it.
func lexicallyInside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// decodeDataURL decodes a data: URI of an image type.
func decodeDataURL(s string) ([]byte, string, error) {
	meta, data, ok := strings.Cut(s[len("data:"):], ",")
	if !ok {
		return nil, "", errors.New("data url without a comma")
	}
	params := strings.Split(meta, ";")
	ctype := strings.ToLower(strings.TrimSpace(params[0]))
	if !strings.HasPrefix(ctype, "image/") {
		return nil, "", fmt.Errorf("data url of type %q", ctype)
	}
	var body []byte
	var err error
	if strings.EqualFold(params[len(params)-1], "base64") {
		body, err = base64.StdEncoding.DecodeString(data)
	} else {
		var u string
		u, err = url.PathUnescape(data)
		body = []byte(u)
	}
	if err != nil || len(body) > MaxBytes {
		return nil, "", errors.New("bad data url")
	}
	if _, _, err := mime.ParseMediaType(ctype); err != nil {
		return nil, "", err
	}
	return body, ctype, nil
}

// identityFile is what IDENTITY.md says of the avatar.
type identityFile struct{ avatar, emoji string }

// maxIdentityBytes bounds the IDENTITY.md read (the reference's 4 MiB).
const maxIdentityBytes = 4 << 20

// readIdentityFile reads the "Avatar:" and "Emoji:" lines of the
// workspace's IDENTITY.md ("- **Avatar:** value"; placeholders in
// parentheses are no value), as the reference parses them.
func readIdentityFile(workspace string) identityFile {
	var id identityFile
	if workspace == "" {
		return id
	}
	f, err := os.Open(filepath.Join(workspace, "IDENTITY.md"))
	if err != nil {
		return id
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIdentityBytes))
	if err != nil {
		return id
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "-")
		label, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		label = strings.ToLower(strings.Trim(strings.TrimSpace(label), "*_`"))
		value = strings.Trim(value, "*_` \t\r")
		if value == "" || strings.HasPrefix(value, "(") && strings.HasSuffix(value, ")") {
			continue
		}
		switch label {
		case "avatar":
			id.avatar = value
		case "emoji":
			id.emoji = value
		}
	}
	return id
}

// emojiOf is s when it can stand for an emoji: short, with a non-ASCII
// character, and no URL or path.
func emojiOf(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || utf8.RuneCountInString(s) > 8 || strings.ContainsAny(s, `/\:`) {
		return ""
	}
	for _, r := range s {
		if r > 127 {
			return s
		}
	}
	return ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// Generated is the SVG face of agent id: its colors, eyes and mouth come
// from the id, so an agent keeps its face; with an emoji, the emoji on
// the same background.
func Generated(id, emoji string) []byte {
	f := fnv.New32a()
	_, _ = f.Write([]byte(id))
	n := f.Sum32()
	hue := n % 360
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">`)
	fmt.Fprintf(&b, `<circle cx="32" cy="32" r="32" fill="hsl(%d,70%%,82%%)"/>`, hue)
	if emoji != "" {
		fmt.Fprintf(&b, `<text x="32" y="33" font-size="34" text-anchor="middle" dominant-baseline="central">%s</text></svg>`, html.EscapeString(emoji))
		return b.Bytes()
	}
	ink := fmt.Sprintf("hsl(%d,45%%,25%%)", hue)
	eye := 3 + int(n>>9%3)      // eye radius 3..5
	gap := 9 + int(n>>11%4)     // half the eye distance 9..12
	smile := 4 + int(n>>13%6)   // mouth depth 4..9
	width := 8 + int(n>>16%6)   // half the mouth width 8..13
	eyeY := 26 + int(n>>19%3)   // 26..28
	mouthY := 40 + int(n>>21%3) // 40..42
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="%d" fill="%s"/><circle cx="%d" cy="%d" r="%d" fill="%s"/>`,
		32-gap, eyeY, eye, ink, 32+gap, eyeY, eye, ink)
	fmt.Fprintf(&b, `<path d="M%d %d Q32 %d %d %d" stroke="%s" stroke-width="3" fill="none" stroke-linecap="round"/></svg>`,
		32-width, mouthY, mouthY+smile, 32+width, mouthY, ink)
	return b.Bytes()
}
