package sandbox

import (
	"context"
	"net"

	"github.com/Microsoft/go-winio"
)

// dialPipe connects to the daemon's named pipe (npipe:////./pipe/…, the
// default of Docker Desktop on Windows).
func dialPipe(ctx context.Context, addr string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, addr)
}
