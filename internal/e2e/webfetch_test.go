package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWebFetchThroughGateway: the model's web_fetch call returns the
// page's readable content; a loopback page is refused unless the
// operator allows its host (tools.web.fetch.ssrfPolicy).
func TestWebFetchThroughGateway(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><head><title>Tide table</title></head><body><main><h1>High tide</h1><p>at 06:12</p></main></body></html>`))
	}))
	defer site.Close()

	g := startWith(t, "", nil, "", `tools: { web: { fetch: { ssrfPolicy: { allowedHostnames: ["127.0.0.1"] } } } },`)
	c := g.dial(t)
	got := toolText(t, c, "agent:main:main", "wf1", "web_fetch", map[string]any{"url": site.URL + "/tides"})
	if !strings.Contains(got, `# High tide`) || !strings.Contains(got, "at 06:12") || !strings.Contains(got, "Tide table") {
		t.Errorf("web_fetch = %s", got)
	}

	g2 := start(t, "", nil)
	c2 := g2.dial(t)
	got = toolText(t, c2, "agent:main:main", "wf2", "web_fetch", map[string]any{"url": site.URL})
	if !strings.Contains(got, "web_fetch refused") || !strings.Contains(got, "private or internal address") || strings.Contains(got, "High tide") {
		t.Errorf("loopback fetch with the default policy = %s", got)
	}
}
