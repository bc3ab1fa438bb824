package httpserve

import (
	"fmt"
	"net"
	"strconv"
)

// Listen opens the gateway's listeners on addrs (host:port), on port
// instead of theirs when port is set. For loopback it binds 127.0.0.1 and
// ::1 on the same port (a missing IPv6 stack is tolerated).
func Listen(addrs []string, port *int) ([]net.Listener, error) {
	if port != nil {
		for i, a := range addrs {
			host, _, _ := net.SplitHostPort(a)
			addrs[i] = net.JoinHostPort(host, strconv.Itoa(*port))
		}
	}
	var lns []net.Listener
	for i, a := range addrs {
		if i > 0 && lns != nil {
			// Later listeners reuse the first one's port (matters for port 0).
			host, _, _ := net.SplitHostPort(a)
			_, p, _ := net.SplitHostPort(lns[0].Addr().String())
			a = net.JoinHostPort(host, p)
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			if i > 0 && isIPv6(a) {
				continue // no IPv6 loopback on this machine
			}
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("httpserve: listen: %w", err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// Ephemeral reports whether the gateway listens on a port the system
// chooses (port 0), for Listen's addrs and port.
func Ephemeral(addrs []string, port *int) bool {
	if port != nil {
		return *port == 0
	}
	if len(addrs) == 0 {
		return false
	}
	_, p, _ := net.SplitHostPort(addrs[0])
	return p == "0"
}

func isIPv6(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() == nil
}
