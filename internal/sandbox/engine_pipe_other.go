//go:build !windows

package sandbox

import (
	"context"
	"errors"
	"net"
)

// dialPipe fails: named pipes are Windows'.
func dialPipe(context.Context, string) (net.Conn, error) {
	return nil, errors.New("npipe:// is a Windows named pipe; use unix:// or tcp:// here")
}
