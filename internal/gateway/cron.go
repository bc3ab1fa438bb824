package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// CronService serves the cron.* methods (the daemon passes *cron.Scheduler).
// Errors with a BadRequest() true method are the caller's and reach it as
// INVALID_REQUEST.
type CronService interface {
	Call(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// cronMethods are the cron.* methods, in the reference's order.
var cronMethods = []string{"cron.list", "cron.status", "cron.get", "cron.add", "cron.update", "cron.remove",
	"cron.run", "cron.runs", "cron.enable", "cron.disable"}

// cronScope is the operator scope each cron method needs.
func cronScope(name string) string {
	switch name {
	case "cron.list", "cron.status", "cron.get", "cron.runs":
		return wire.ScopeRead
	}
	return wire.ScopeAdmin
}

func (s *Server) handleCron(ctx context.Context, cl *call) (any, error) {
	if s.cfg.Cron == nil {
		return nil, wire.NewError(wire.CodeUnavailable, "cron is not enabled")
	}
	res, err := s.cfg.Cron.Call(ctx, cl.method, cl.params)
	var br interface{ BadRequest() bool }
	if errors.As(err, &br) && br.BadRequest() {
		return nil, invalid(err.Error())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cl.method, err)
	}
	return res, nil
}
