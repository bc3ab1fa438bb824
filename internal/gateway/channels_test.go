package gateway

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestChannelsStatus(t *testing.T) {
	// Without connectors: an empty report.
	e := newEnv(t, envOptions{})
	var empty wire.ChannelsStatusResult
	e.operator().ok("channels.status", map[string]any{}, &empty)
	if empty.Ts == 0 || len(empty.ChannelOrder) != 0 || empty.Channels == nil || empty.ChannelAccounts == nil {
		t.Errorf("empty = %+v", empty)
	}

	e = newEnv(t, envOptions{gateway: func(c *Config) {
		c.ChannelStatus = func() []wire.ChannelStatus {
			return []wire.ChannelStatus{{Channel: "irc", Accounts: []wire.ChannelAccount{
				{AccountID: "default", State: "connected", Connected: true, Running: true, Nick: "sbbot", Rooms: []string{"#a"}},
			}}}
		}
	}})
	c := e.operator()
	var res wire.ChannelsStatusResult
	c.ok("channels.status", map[string]any{"probe": true, "timeoutMs": 1000}, &res)
	if len(res.ChannelOrder) != 1 || res.ChannelOrder[0] != "irc" || !res.Channels["irc"].Connected || !res.Channels["irc"].Running ||
		len(res.ChannelAccounts["irc"]) != 1 || res.ChannelAccounts["irc"][0].Nick != "sbbot" {
		t.Errorf("status = %+v", res)
	}
	if err := c.fail("channels.status", map[string]any{"probe": "yes"}); err.Code != wire.CodeInvalidRequest {
		t.Errorf("bad probe = %+v", err)
	}
	if err := c.fail("channels.status", map[string]any{"bogus": 1}); err.Code != wire.CodeInvalidRequest {
		t.Errorf("unknown param = %+v", err)
	}
}
