// Package web owns the web_fetch tool: an HTTP GET of a public http(s)
// page, reduced to its readable content as Markdown or text. An SSRF
// guard keeps fetches out of private and internal networks (checked on
// every dialed address, redirects included), and the content comes back
// marked as external, untrusted data.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// ToolName is the tool's wire name.
const ToolName = "web_fetch"

// Defaults (the reference's).
const (
	DefaultMaxChars         = 20000
	DefaultMaxResponseBytes = 750000
	DefaultTimeout          = 30 * time.Second
	DefaultMaxRedirects     = 3
	defaultUserAgent        = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36 Switchboard"
)

// Markers around fetched content: the model is told it is data.
const (
	externalStart = "<<<EXTERNAL_UNTRUSTED_CONTENT source=web_fetch>>>"
	externalEnd   = "<<<END_EXTERNAL_UNTRUSTED_CONTENT>>>"
)

// Config configures the tool (tools.web.fetch).
type Config struct {
	// MaxChars is the default output size; MaxCharsCap bounds what a call
	// may ask for.
	MaxChars, MaxCharsCap int
	// MaxResponseBytes bounds the download.
	MaxResponseBytes int64
	Timeout          time.Duration
	// MaxRedirects is how many redirects a fetch follows (0: the default
	// 3; negative: none).
	MaxRedirects int
	UserAgent    string
	// AllowPrivateNetwork is ssrfPolicy.dangerouslyAllowPrivateNetwork;
	// AllowedHostnames are exact hosts exempt from the guard.
	AllowPrivateNetwork bool
	AllowedHostnames    []string
}

type fetchTool struct {
	cfg    Config
	client *http.Client
	guard  *guard
	now    func() time.Time
}

// New returns the web_fetch tool.
func New(cfg Config) tools.Tool {
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = DefaultMaxChars
	}
	if cfg.MaxCharsCap <= 0 {
		cfg.MaxCharsCap = max(DefaultMaxChars, cfg.MaxChars)
	}
	cfg.MaxChars = min(cfg.MaxChars, cfg.MaxCharsCap)
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = DefaultMaxRedirects
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0 // follow none
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = defaultUserAgent
	}
	g := &guard{allowPrivate: cfg.AllowPrivateNetwork}
	for _, h := range cfg.AllowedHostnames {
		g.allowedHosts = append(g.allowedHosts, strings.ToLower(strings.TrimSpace(h)))
	}
	tr := &http.Transport{
		DialContext:           g.dialContext(&net.Dialer{Timeout: 10 * time.Second}),
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		// A proxy from the environment would resolve names the guard never
		// sees.
		Proxy: nil,
	}
	t := &fetchTool{cfg: cfg, guard: g, now: time.Now}
	t.client = &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > cfg.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", cfg.MaxRedirects)
			}
			return t.checkURL(req.URL)
		},
	}
	return t
}

func (t *fetchTool) Name() string { return ToolName }

func (t *fetchTool) Description() string {
	return "Fetch a web page (http/https GET, no JavaScript) and return its readable content as markdown or text."
}

func (t *fetchTool) Schema() json.RawMessage { return fetchSchema }

// fetchSchema is web_fetch's parameters, made once: a run lists every
// tool's schema.
var fetchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "URL to fetch (http or https)."},
    "extractMode": {"type": "string", "enum": ["markdown", "text"], "description": "Output format (default markdown)."},
    "maxChars": {"type": "number", "minimum": 100, "description": "Truncate the content to this many characters."}
  },
  "required": ["url"]
}`)

// result is web_fetch's payload.
type result struct {
	URL             string `json:"url"`
	FinalURL        string `json:"finalUrl"`
	Status          int    `json:"status"`
	ExtractMode     string `json:"extractMode"`
	Extractor       string `json:"extractor"`
	ContentType     string `json:"contentType,omitempty"`
	Title           string `json:"title,omitempty"`
	Warning         string `json:"warning,omitempty"`
	ExternalContent bool   `json:"externalContent"`
	Truncated       bool   `json:"truncated"`
	Length          int    `json:"length"`
	RawLength       int    `json:"rawLength"`
	FetchedAt       string `json:"fetchedAt"`
	TookMs          int64  `json:"tookMs"`
	Text            string `json:"text"`
}

// checkURL accepts http(s) URLs whose host the guard does not refuse by
// name.
func (t *fetchTool) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("only http and https URLs can be fetched, not %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil {
		return errors.New("URLs with credentials are not fetched")
	}
	return t.guard.checkHost(u.Hostname())
}

func (t *fetchTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	raw, err := p.RequiredString("url")
	if err != nil {
		return nil, err
	}
	mode := strings.ToLower(strings.TrimSpace(p.String("extractMode")))
	switch mode {
	case "":
		mode = "markdown"
	case "markdown", "text":
	default:
		return nil, fmt.Errorf("extractMode must be markdown or text, not %q", mode)
	}
	maxChars := t.cfg.MaxChars
	if n, ok := p.Int("maxChars", 100); ok {
		maxChars = min(n, t.cfg.MaxCharsCap)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	if err := t.checkURL(u); err != nil {
		return nil, fmt.Errorf("web_fetch refused %s: %w", u.Redacted(), err)
	}
	start := t.now()
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	req.Header.Set("User-Agent", t.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	req.Header.Set("Accept-Language", "en-US,en;q=0.9")
	resp, err := t.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrBlocked) {
			return nil, fmt.Errorf("web_fetch refused %s: %w", u.Redacted(), unwrapURLError(err))
		}
		return nil, fmt.Errorf("web_fetch %s: %w", u.Redacted(), unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("web_fetch %s: reading the response: %w", u.Redacted(), err)
	}
	res := &result{URL: u.String(), FinalURL: resp.Request.URL.String(), Status: resp.StatusCode, ExtractMode: mode,
		ExternalContent: true}
	if int64(len(body)) > t.cfg.MaxResponseBytes {
		body = body[:t.cfg.MaxResponseBytes]
		res.Truncated = true
		res.Warning = fmt.Sprintf("the response was cut at %d bytes", t.cfg.MaxResponseBytes)
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	res.ContentType = ctype
	var text string
	switch {
	case ctype == "text/html" || ctype == "application/xhtml+xml" || (ctype == "" && looksHTML(body)):
		doc, err := html.Parse(strings.NewReader(string(body)))
		if err != nil {
			return nil, fmt.Errorf("web_fetch %s: parsing HTML: %w", u.Redacted(), err)
		}
		res.Extractor = "html"
		res.Title, text = extract(doc, mode == "markdown")
	case strings.HasPrefix(ctype, "text/") || ctype == "application/json" || strings.HasSuffix(ctype, "+json") || ctype == "application/xml":
		res.Extractor = "raw"
		text = string(body)
	default:
		return nil, fmt.Errorf("web_fetch %s: unsupported content type %q (HTML, text and JSON pages can be fetched)", u.Redacted(), ctype)
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	res.RawLength = utf8.RuneCountInString(text)
	if res.RawLength > maxChars {
		text = string([]rune(text)[:maxChars])
		res.Truncated = true
	}
	res.Title = clip(res.Title, 256)
	res.Text = externalStart + "\n" + text + "\n" + externalEnd
	res.Length = utf8.RuneCountInString(res.Text)
	res.FetchedAt = start.UTC().Format(time.RFC3339)
	res.TookMs = t.now().Sub(start).Milliseconds()
	if resp.StatusCode >= 400 {
		out := tools.JSONResult(res)
		out.IsError = true
		return out, nil
	}
	return tools.JSONResult(res), nil
}

func looksHTML(b []byte) bool {
	head := strings.ToLower(string(b[:min(len(b), 512)]))
	return strings.Contains(head, "<html") || strings.Contains(head, "<!doctype html")
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// unwrapURLError drops the *url.Error wrapper's repetition of method and
// URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
