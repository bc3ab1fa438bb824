package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// A request nested 10k levels deep is answered INVALID_REQUEST (it used to
// get no answer at all), and the connection goes on working.
func TestDeepRequestAnswered(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	for _, depth := range []int{10_000, 100_000} {
		ch := make(chan *wire.Frame, 1)
		c.mu.Lock()
		c.waiters["deep"] = ch
		c.mu.Unlock()
		c.sendRaw(`{"type":"req","id":"deep","method":"chat.send","params":{"sessionKey":"main","message":` +
			strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}`)
		f := c.await(ch)
		if f.OK || f.Error == nil || f.Error.Code != wire.CodeInvalidRequest || !strings.Contains(f.Error.Message, "nested more than") {
			t.Fatalf("deep request (%d) answered %+v", depth, f)
		}
	}
	c.ok(wire.MethodHealth, nil, nil)
}

func TestStorageFailureMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("sqlite.AppendMessages: %w", syscall.EROFS), "state dir not writable: read-only file system"},
		{fmt.Errorf("sqlite.AppendMessages: %w", syscall.ENOSPC), "state dir not writable: no space left on device"},
		{errors.New("sqlite.StartRun: attempt to write a readonly database (8)"), "state dir not writable: readonly database"},
		{errors.New("sqlite.CreateRun: database or disk is full (13)"), "state dir not writable: disk is full"},
		{errors.New("something else"), ""},
		{fmt.Errorf("postgres.CreateRun: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), "database unreachable"},
		{errors.New("postgres.CreateRun: failed to connect to `user=sb database=sb`: 127.0.0.1:5432 (127.0.0.1): failed to receive message: unexpected EOF"), "database unreachable"},
		{errors.New("postgres.StartRun: FATAL: terminating connection due to administrator command (SQLSTATE 57P01)"), "database unreachable"},
		{fmt.Errorf("postgres.GetRun: %w", context.DeadlineExceeded), "database unreachable"},
		{fmt.Errorf("postgres.CreateRun: %w", errors.New("duplicate key value (SQLSTATE 23505)")), ""},
		{fmt.Errorf("web fetch: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), ""},
	} {
		got, ok := storageFailure(tc.err)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("storageFailure(%v) = %q, %v; want %q", tc.err, got, ok, tc.want)
		}
	}
}
