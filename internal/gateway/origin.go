package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// originPolicy decides which browser origins may open the WebSocket, as
// the reference's gateway.controlUi settings do. A request without an
// Origin header is not from a browser and is not subject to it. A browser
// request is admitted when its origin is listed in allowedOrigins, or when
// it is a same-origin load (Origin matches Host) from a private host:
// loopback, RFC 1918 and link-local addresses, the Tailscale CGNAT range,
// and .local, .ts.net, localhost and single-label names. A public name that
// matches Host is what a DNS-rebinding page looks like, so it needs the
// explicit dangerous fallback.
type originPolicy struct {
	allowed        []string // normalised "scheme://host[:port]"; "*" admits all
	hostedFallback bool
}

func newOriginPolicy(allowed []string, hostFallback bool) originPolicy {
	p := originPolicy{hostedFallback: hostFallback}
	for _, o := range allowed {
		if o = normOrigin(o); o != "" {
			p.allowed = append(p.allowed, o)
		}
	}
	return p
}

// normOrigin lower-cases an origin and drops a trailing slash and default
// ports.
func normOrigin(o string) string {
	o = strings.TrimSpace(o)
	if o == "*" {
		return o
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	host := strings.ToLower(u.Host)
	switch {
	case u.Scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case u.Scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

// check returns "" when r may connect, else the reason to refuse it.
func (p originPolicy) check(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	norm := normOrigin(origin)
	if norm == "" {
		return "origin not allowed"
	}
	if slices.Contains(p.allowed, "*") || slices.Contains(p.allowed, norm) {
		return ""
	}
	u, _ := url.Parse(norm)
	if !strings.EqualFold(u.Host, r.Host) && !strings.EqualFold(u.Host, stripDefaultPort(r.Host, u.Scheme)) {
		return "origin not allowed"
	}
	host := u.Hostname()
	if privateHost(host) || p.hostedFallback {
		return ""
	}
	return "origin not allowed"
}

func stripDefaultPort(host, scheme string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return host
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return h
	}
	return host
}

// cgnat is the Tailscale address range, 100.64.0.0/10 (a func: a parsed
// package-level prefix would be parsed at every process start).
func cgnat() netip.Prefix { return netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, 0, 0}), 10) }

// privateHost reports whether a browser reaching host is on this machine or
// a private network: no public DNS name can stand for it.
func privateHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ip = ip.Unmap()
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || cgnat().Contains(ip)
	}
	switch {
	case host == "localhost", strings.HasSuffix(host, ".localhost"),
		strings.HasSuffix(host, ".local"), strings.HasSuffix(host, ".ts.net"),
		host != "" && !strings.Contains(host, "."):
		return true
	}
	return false
}
