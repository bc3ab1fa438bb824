package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

const page = `<!doctype html><html><head><title>Herons of the coast</title><style>p{color:red}</style>
<script>alert("x")</script></head><body><nav>Home | About</nav><header>Site header</header>
<main><h1>Grey herons</h1><p>The <strong>grey heron</strong> waits at the shore.
See <a href="https://example.org/birds">the bird list</a>.</p>
<p>Herons stand still in shallow water for long stretches, then strike fast at fish, frogs and small mammals that come near.</p>
<ul><li>tall</li><li>patient</li></ul><pre>x := 1
y := 2</pre></main><footer>© footer</footer></body></html>`

func fetch(t *testing.T, cfg Config, args map[string]any) (map[string]any, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := New(cfg).Call(context.Background(), b)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Text), &out); err != nil {
		t.Fatalf("result text is not JSON: %v\n%s", err, res.Text)
	}
	out["__isError"] = res.IsError
	return out, nil
}

func TestFetchExtracts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(page))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2})
		case "/missing":
			http.NotFound(w, r)
		case "/hop":
			http.Redirect(w, r, "/page", http.StatusFound)
		}
	}))
	defer srv.Close()
	cfg := Config{AllowedHostnames: []string{"127.0.0.1"}}

	md, err := fetch(t, cfg, map[string]any{"url": srv.URL + "/page"})
	if err != nil {
		t.Fatal(err)
	}
	text := md["text"].(string)
	for _, want := range []string{"# Grey herons", "The **grey heron** waits at the shore.", "[the bird list](https://example.org/birds)", "- tall", "- patient", "```\nx := 1\ny := 2\n```", externalStart, externalEnd} {
		if !strings.Contains(text, want) {
			t.Errorf("markdown lacks %q:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"alert", "Home | About", "Site header", "footer", "color:red"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("markdown has %q:\n%s", unwanted, text)
		}
	}
	if md["title"] != "Herons of the coast" || md["status"] != 200.0 || md["extractMode"] != "markdown" || md["externalContent"] != true {
		t.Errorf("result %v", md)
	}

	plain, err := fetch(t, cfg, map[string]any{"url": srv.URL + "/hop", "extractMode": "text", "maxChars": 100})
	if err != nil {
		t.Fatal(err)
	}
	ptext := plain["text"].(string)
	if strings.Contains(ptext, "**") || strings.Contains(ptext, "#") || !strings.Contains(ptext, "grey heron") {
		t.Errorf("text mode:\n%s", ptext)
	}
	if plain["finalUrl"] != srv.URL+"/page" || plain["truncated"] != true || plain["rawLength"].(float64) <= 100 {
		t.Errorf("redirected, truncated fetch: %v", plain)
	}

	if js, _ := fetch(t, cfg, map[string]any{"url": srv.URL + "/json"}); !strings.Contains(js["text"].(string), `{"ok":true}`) || js["extractor"] != "raw" {
		t.Errorf("json: %v", js)
	}
	if nf, _ := fetch(t, cfg, map[string]any{"url": srv.URL + "/missing"}); nf["status"] != 404.0 || nf["__isError"] != true {
		t.Errorf("404: %v", nf)
	}
	if _, err := fetch(t, cfg, map[string]any{"url": srv.URL + "/bin"}); err == nil || !strings.Contains(err.Error(), "unsupported content type") {
		t.Errorf("binary: %v", err)
	}
}

func TestFetchGuard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/out" {
			// A redirect that leads back into the loopback network by address.
			u, _ := url.Parse(r.Header.Get("X-Target"))
			http.Redirect(w, r, u.String(), http.StatusFound)
			return
		}
		w.Write([]byte("secret"))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	tests := []struct {
		name string
		cfg  Config
		url  string
		want string // error substring; "" means allowed
	}{
		{"loopback by default", Config{}, srv.URL, "private or internal address"},
		{"localhost by name", Config{}, "http://localhost:" + port, "private or internal host"},
		{"metadata address", Config{}, "http://169.254.169.254/latest/meta-data", "private or internal address"},
		{"ipv6 loopback", Config{}, "http://[::1]:" + port, "private or internal address"},
		{"file scheme", Config{}, "file:///etc/passwd", "only http and https"},
		{"credentials", Config{AllowPrivateNetwork: true}, "http://user:pw@127.0.0.1:" + port, "credentials"},
		{"opt-in private network", Config{AllowPrivateNetwork: true}, srv.URL, ""},
		{"allowed host", Config{AllowedHostnames: []string{"127.0.0.1"}}, srv.URL, ""},
		{"allowed name, private address", Config{AllowedHostnames: []string{"localhost"}}, "http://localhost:" + port, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fetch(t, tt.cfg, map[string]any{"url": tt.url})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// A page on an allowed host that redirects to a private address is
	// refused at the redirect.
	allowed := Config{AllowedHostnames: []string{"localhost"}}
	b, _ := json.Marshal(map[string]any{"url": "http://localhost:" + port + "/out"})
	tool := New(allowed).(*fetchTool)
	tool.client.Transport.(*http.Transport).Proxy = nil
	req := func() error {
		r, _ := http.NewRequest("GET", "http://localhost:"+port+"/out", nil)
		r.Header.Set("X-Target", srv.URL)
		resp, err := tool.client.Do(r)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := req(); err == nil || !errors.Is(err, ErrBlocked) {
		t.Errorf("redirect into loopback by address: %v (args %s)", err, b)
	}
}

func TestBlocked(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "0.0.0.0"} {
		if !Blocked(netip.MustParseAddr(a)) {
			t.Errorf("%s not blocked", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111"} {
		if Blocked(netip.MustParseAddr(a)) {
			t.Errorf("%s blocked", a)
		}
	}
}

func FuzzExtract(f *testing.F) {
	f.Add(page)
	f.Add("<ul><li><ul><li>x</ul></ul><pre><code>y</code></pre>")
	f.Fuzz(func(t *testing.T, s string) {
		doc, err := html.Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		extract(doc, true)
		extract(doc, false)
	})
}

// Every run lists the tools' schemas: web_fetch's is made once, and is
// valid JSON naming the url parameter.
func TestFetchSchemaAllocatesNothing(t *testing.T) {
	tool := New(Config{})
	if n := testing.AllocsPerRun(100, func() { _ = tool.Schema() }); n != 0 {
		t.Errorf("Schema made %v allocations, want 0", n)
	}
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(tool.Schema(), &s); err != nil || len(s.Required) != 1 || s.Required[0] != "url" {
		t.Errorf("schema = %s (%v), want one required url", tool.Schema(), err)
	}
}
