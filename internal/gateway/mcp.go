package gateway

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// handleMCPList reports the configured MCP servers. It does not start
// them: servers that no run has needed yet are "idle".
func (s *Server) handleMCPList(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	out := wire.MCPListResult{Servers: []wire.MCPServer{}}
	if s.cfg.MCPServers != nil {
		out.Servers = append(out.Servers, s.cfg.MCPServers()...)
	}
	return out, nil
}
