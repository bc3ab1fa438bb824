package gateway

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Texts of the refusals of Doors.
const (
	msgHostNotAllowed = "host not allowed"
	msgNotJSON        = "unsupported content type %q: send the body as JSON (Content-Type: application/json)"
)

// hostPolicy decides which Host headers the gateway port answers, so that
// a DNS-rebinding page (a public name of the attacker's pointed at this
// machine) reaches no door. Admitted: no Host, IP literals (a page can only
// send one by being loaded from that address), the private names of
// privateHost (localhost, .local, .ts.net, single-label names), the hosts
// of gateway.controlUi.allowedOrigins and of the gateway's public URLs;
// every host when an allowed origin is "*" or the dangerous Host-header
// origin fallback is on.
type hostPolicy struct {
	names []string // lower case, no port
	any   bool
}

func newHostPolicy(allowedOrigins, publicURLs []string, fallback bool) hostPolicy {
	p := hostPolicy{any: fallback}
	for _, o := range slices.Concat(allowedOrigins, publicURLs) {
		if strings.TrimSpace(o) == "*" {
			p.any = true
			continue
		}
		if u, err := url.Parse(strings.TrimSpace(o)); err == nil && u.Hostname() != "" {
			p.names = append(p.names, strings.ToLower(u.Hostname()))
		}
	}
	return p
}

// check returns "" when a request with this Host header may be served.
func (p hostPolicy) check(hostHeader string) string {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if _, err := netip.ParseAddr(host); err == nil || host == "" || p.any || privateHost(host) || slices.Contains(p.names, host) {
		return ""
	}
	return msgHostNotAllowed
}

// browserRefusal returns the status and reason to refuse r with, or 0
// when it may go on: the Host check, then the browser origin check. It
// is the one check every HTTP door and the WebSocket upgrade apply.
func (s *Server) browserRefusal(r *http.Request) (int, string) {
	if reason := s.hosts.check(r.Host); reason != "" {
		return http.StatusForbidden, reason
	}
	if reason := s.origins.check(r); reason != "" {
		return http.StatusForbidden, reason
	}
	return 0, ""
}

// Doors wraps the handler of the gateway port (every HTTP door: /v1/*,
// /tools/invoke, /hooks/*, /a2a/*, /mcp, /metrics, the web UI and its
// assets, channel webhooks) with what a web page must not get past,
// whatever gateway.auth says: a Host that is not one of the gateway's
// names is refused (403 "host not allowed", DNS rebinding), a browser
// Origin the WebSocket would refuse likewise (403 "origin not allowed"),
// and a POST, PUT or PATCH whose body is not declared JSON gets 415, so
// that no cross-site "simple" request (text/plain, a form) reaches a JSON
// endpoint. Clients that send no Origin (curl, SDKs, Prometheus,
// webhooks) are not affected by the origin check.
func (s *Server) Doors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, reason := s.browserRefusal(r); status != 0 {
			s.log.Debug("http request refused", "remote", r.RemoteAddr, "path", r.URL.Path, "host", r.Host, "origin", r.Header.Get("Origin"), "reason", reason)
			httpError(w, status, reason, 0)
			return
		}
		if hasJSONBody(r.Method) && !isJSON(r.Header.Get("Content-Type")) {
			httpError(w, http.StatusUnsupportedMediaType, fmt.Sprintf(msgNotJSON, r.Header.Get("Content-Type")), 0)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasJSONBody reports whether requests of method carry a body on the
// gateway port, all of whose bodies are JSON.
func hasJSONBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// isJSON reports whether a Content-Type value declares JSON
// (application/json or a +json type).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
