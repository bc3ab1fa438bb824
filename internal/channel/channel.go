// Package channel holds what every chat channel connector shares: the
// inbound message a connector hands to the gateway, the routing of that
// message to a session key (the reference's session.dmScope and per-group
// sessions, Telegram's forum topics), the access gates (dmPolicy/allowFrom, groupPolicy/groups/
// groupAllowFrom, mention gating), reply splitting, and the bot-pair loop
// guard. Everything here is pure and safe to call from any goroutine;
// connectors live in sub-packages (channel/irc, channel/telegram).
package channel

import (
	"context"
	"strings"
)

// Chat kinds of an inbound message.
const (
	KindDirect = "direct"
	KindGroup  = "group"
)

// Inbound is one message a connector received.
type Inbound struct {
	// Channel is the connector's id ("irc").
	Channel string
	// AccountID is the connector account ("default" for a single one).
	AccountID string
	// Kind is KindDirect or KindGroup.
	Kind string
	// Room is the group conversation id ("#room"); empty for DMs.
	Room string
	// Sender is the sender's stable identity (IRC: nick!user@host) and
	// SenderName its mutable display name (IRC: the nick).
	Sender, SenderName string
	// Text is the message body.
	Text string
	// Mentioned reports whether the connector saw its own name in Text.
	Mentioned bool
	// DisplayName, when set, is how the sender is named in a group
	// session's transcript instead of SenderName (Telegram: the user's
	// name, while SenderName is the numeric user id).
	DisplayName string
	// SystemPrompt is the room's extra system prompt when the connector
	// resolves it itself (Telegram's per-group and per-topic settings).
	SystemPrompt string
}

// Label is how the sender is named in a group session's transcript.
func (in Inbound) Label() string {
	if in.DisplayName != "" {
		return in.DisplayName
	}
	return in.SenderName
}

// ReplyTo returns where replies to in go: the room for a group message,
// the sender's name for a DM.
func (in Inbound) ReplyTo() string {
	if in.Kind == KindGroup {
		return in.Room
	}
	return in.SenderName
}

// Route is where a session's replies go on a channel.
type Route struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId,omitempty"`
	To        string `json:"to"`
}

// Status is one connector's state, as channels.status reports it.
type Status struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId"`
	// State is "connecting", "connected", "backoff" or "stopped".
	State     string `json:"state"`
	Connected bool   `json:"connected"`
	// Server is host:port; Nick is the nick in use.
	Server string `json:"server,omitempty"`
	Nick   string `json:"nick,omitempty"`
	// Rooms are the joined rooms.
	Rooms      []string `json:"rooms,omitempty"`
	LastError  string   `json:"lastError,omitempty"`
	Reconnects int      `json:"reconnects"`
	// ConnectedAtMs is when the current connection registered (Unix ms, 0
	// when not connected).
	ConnectedAtMs int64 `json:"connectedAtMs,omitempty"`
	Inbound       int64 `json:"inbound"`
	Outbound      int64 `json:"outbound"`
}

// Channel is a running connector as the gateway uses it: send text to a
// target and report state.
type Channel interface {
	// Name is the channel id ("irc").
	Name() string
	// Send delivers text to target (a room or a nick), split to the
	// channel's line limit.
	Send(ctx context.Context, target, text string) error
	// Status reports the connector's state.
	Status() Status
}

// Deliverer is what a connector calls with each inbound message. It
// returns once the message is durable (stored as a run's input) or
// dropped by policy.
type Deliverer interface {
	Deliver(ctx context.Context, in Inbound) error
}

// NormalizeRoom lower-cases and trims a room id; IRC channel names are
// case-insensitive.
func NormalizeRoom(room string) string { return strings.ToLower(strings.TrimSpace(room)) }
