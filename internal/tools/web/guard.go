package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

// ErrBlocked marks a fetch refused by the SSRF guard.
var ErrBlocked = errors.New("blocked")

// blockedPrefixes are the address ranges a fetch never reaches unless the
// operator allows private networks: loopback, private, link-local (cloud
// metadata), carrier-grade NAT, benchmarking, unique-local, multicast and
// the unspecified and reserved ranges. They are parsed on the first check
// (the package has no init-time work).
var blockedPrefixes = lazy.Value[[]netip.Prefix]{New: parseBlockedPrefixes}

func parseBlockedPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96", "2001:db8::/32",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// Blocked reports whether addr is in a range the guard refuses.
func Blocked(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range blockedPrefixes.Get() {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// guard decides which hosts and addresses a fetch may reach.
type guard struct {
	allowPrivate bool
	allowedHosts []string // lower case
}

// checkHost refuses names that are internal by themselves, before any
// lookup ("localhost", "*.localhost", "*.internal", "*.local").
func (g *guard) checkHost(host string) error {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if g.allowPrivate || slices.Contains(g.allowedHosts, h) {
		return nil
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".internal") || strings.HasSuffix(h, ".local") {
		return fmt.Errorf("%w: %s is a private or internal host", ErrBlocked, host)
	}
	if a, err := netip.ParseAddr(h); err == nil && Blocked(a) {
		return fmt.Errorf("%w: %s is a private or internal address", ErrBlocked, host)
	}
	return nil
}

// control runs on every connection the fetcher's dialer makes, after name
// resolution: the address actually dialed is what is checked, so neither
// DNS answers nor redirects can lead a fetch into a private network.
func (g *guard) control(host string) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if g.allowPrivate || slices.Contains(g.allowedHosts, strings.ToLower(host)) {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: unparsable address %q", ErrBlocked, address)
		}
		if Blocked(ap.Addr()) {
			return fmt.Errorf("%w: %s resolves to the private or internal address %s", ErrBlocked, host, ap.Addr())
		}
		return nil
	}
}

// dialContext dials with the guard's check bound to the request's host.
func (g *guard) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		dd := *d
		dd.Control = g.control(host)
		return dd.DialContext(ctx, network, addr)
	}
}
