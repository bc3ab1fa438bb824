package gateway

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// handleChannelsStatus reports the chat channel connectors (channels.irc).
func (s *Server) handleChannelsStatus(ctx context.Context, cl *call) (any, error) {
	var p struct {
		Probe     bool `json:"probe"`
		TimeoutMs int  `json:"timeoutMs"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	out := wire.ChannelsStatusResult{
		Ts: s.now().UnixMilli(), ChannelOrder: []string{},
		Channels: map[string]wire.ChannelSummary{}, ChannelAccounts: map[string][]wire.ChannelAccount{},
	}
	if s.cfg.ChannelStatus == nil {
		return out, nil
	}
	for _, ch := range s.cfg.ChannelStatus() {
		sum := wire.ChannelSummary{Configured: true}
		for _, a := range ch.Accounts {
			sum.Running = sum.Running || a.Running
			sum.Connected = sum.Connected || a.Connected
		}
		out.ChannelOrder = append(out.ChannelOrder, ch.Channel)
		out.Channels[ch.Channel] = sum
		out.ChannelAccounts[ch.Channel] = append([]wire.ChannelAccount{}, ch.Accounts...)
	}
	return out, nil
}
