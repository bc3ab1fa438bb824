package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Unreachable reports whether err is a PostgreSQL store's (its methods wrap
// errors as "postgres.<Method>: …") that did not reach the database: the
// connection refused, cut or timed out, or the server shutting down or
// starting (SQLSTATE class 08, 57P01-57P03). Such a call may succeed when
// tried again, even while another call already does (a pool's connection
// that a restart cut fails once).
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if !strings.Contains(msg, "postgres.") {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	for _, s := range []string{"failed to connect", "conn closed", "connection refused", "unexpected EOF", "SQLSTATE 08", "SQLSTATE 57P0"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
