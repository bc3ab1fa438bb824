package channel

import (
	"strings"
)

// session.dmScope values: how direct messages map to sessions.
const (
	DMScopeMain                  = "main"
	DMScopePerPeer               = "per-peer"
	DMScopePerChannelPeer        = "per-channel-peer"
	DMScopePerAccountChannelPeer = "per-account-channel-peer"
)

// DMScopes lists the valid session.dmScope values.
var DMScopes = []string{DMScopeMain, DMScopePerPeer, DMScopePerChannelPeer, DMScopePerAccountChannelPeer}

// SessionKey returns the canonical session key an inbound message routes
// to, as the reference's channel routing builds it:
//
//	DM, dmScope main (default):        agent:<agent>:<mainKey>
//	DM, per-peer:                      agent:<agent>:direct:<peer>
//	DM, per-channel-peer:              agent:<agent>:<channel>:direct:<peer>
//	DM, per-account-channel-peer:      agent:<agent>:<channel>:<account>:direct:<peer>
//	group or room:                     agent:<agent>:<channel>:group:<room>
//	forum topic (Telegram):            agent:<agent>:<channel>:group:<chat>:topic:<thread>
//
// (a connector puts a topic into Room as "<chat>:topic:<thread>").
//
// Peers (the sender's name) and rooms are lower-cased: IRC nicks and
// channel names compare case-insensitively.
func SessionKey(agentID, mainKey, dmScope string, in Inbound) string {
	agent := "agent:" + strings.ToLower(strings.TrimSpace(agentID)) + ":"
	ch := strings.ToLower(strings.TrimSpace(in.Channel))
	if in.Kind == KindGroup {
		return agent + ch + ":group:" + NormalizeRoom(in.Room)
	}
	peer := strings.ToLower(strings.TrimSpace(in.SenderName))
	switch dmScope {
	case DMScopePerPeer:
		return agent + "direct:" + peer
	case DMScopePerChannelPeer:
		return agent + ch + ":direct:" + peer
	case DMScopePerAccountChannelPeer:
		acct := strings.ToLower(strings.TrimSpace(in.AccountID))
		if acct == "" {
			acct = "default"
		}
		return agent + ch + ":" + acct + ":direct:" + peer
	}
	mk := strings.ToLower(strings.TrimSpace(mainKey))
	if mk == "" {
		mk = "main"
	}
	return agent + mk
}

// RouteFromKey derives the reply route a session key itself names, for
// keys SessionKey builds for channel (group keys name their room, peer-
// scoped DM keys their peer, topic keys "<chat>:topic:<thread>"). ok is false for keys that do not name one
// (the main session, other channels' keys).
func RouteFromKey(channel, key string) (r Route, ok bool) {
	if !namesChannel(channel, key) {
		return Route{}, false // most keys: nothing to split
	}
	parts := strings.Split(key, ":")
	if len(parts) < 3 || parts[0] != "agent" {
		return Route{}, false
	}
	rest := parts[2:]
	if len(rest) < 3 || rest[0] != channel {
		return Route{}, false
	}
	switch {
	case len(rest) == 3 && (rest[1] == "group" || rest[1] == "direct") && rest[2] != "":
		return Route{Channel: channel, To: rest[2]}, true
	case len(rest) == 5 && rest[1] == "group" && rest[2] != "" && rest[3] == "topic" && rest[4] != "":
		return Route{Channel: channel, To: rest[2] + ":topic:" + rest[4]}, true
	case len(rest) == 4 && rest[2] == "direct" && rest[3] != "":
		return Route{Channel: channel, AccountID: rest[1], To: rest[3]}, true
	}
	return Route{}, false
}

// namesChannel reports whether key starts "agent:<id>:<channel>:", which
// every key RouteFromKey routes does: a run's tools ask of its session's
// key at every turn, and splitting it was two allocations.
func namesChannel(channel, key string) bool {
	rest, ok := strings.CutPrefix(key, "agent:")
	if !ok {
		return false
	}
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		return false
	}
	rest = rest[i+1:]
	return len(rest) > len(channel) && rest[:len(channel)] == channel && rest[len(channel)] == ':'
}
