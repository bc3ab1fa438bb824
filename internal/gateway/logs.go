package gateway

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/logfile"
)

// handleLogsTail serves logs.tail: whole lines of the gateway's log file
// from a byte cursor, bounded by limit and maxBytes, in the reference's
// result shape ({file, cursor, size, lines, truncated?, reset?,
// skippedBytes?}).
func (s *Server) handleLogsTail(ctx context.Context, cl *call) (any, error) {
	var p wire.LogsTailParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if s.cfg.LogFile == "" {
		return nil, wire.NewError(wire.CodeUnavailable, "log read failed: the gateway writes no log file")
	}
	res, err := logfile.Tail(s.cfg.LogFile, logfile.TailParams{Cursor: p.Cursor, Limit: p.Limit, MaxBytes: p.MaxBytes})
	if err != nil {
		s.log.Warn("logs.tail failed", "err", err)
		return nil, wire.NewError(wire.CodeUnavailable, "log read failed: "+err.Error())
	}
	return res, nil
}
