package wire

// MethodChannelsStatus reports each chat channel connector's state.
const MethodChannelsStatus = "channels.status"

// addChannelsSchemas adds the schemas of this file's methods.
func addChannelsSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodChannelsStatus] = Object(nil, P("probe", Bool()), P("timeoutMs", Int(0)))
}

// ChannelAccount is one connector account's state.
type ChannelAccount struct {
	AccountID string `json:"accountId"`
	// State is "connecting", "connected", "backoff" or "stopped".
	State         string   `json:"state"`
	Connected     bool     `json:"connected"`
	Running       bool     `json:"running"`
	Server        string   `json:"server,omitempty"`
	Nick          string   `json:"nick,omitempty"`
	Rooms         []string `json:"rooms,omitempty"`
	LastError     string   `json:"lastError,omitempty"`
	Reconnects    int      `json:"reconnects"`
	ConnectedAtMs int64    `json:"connectedAtMs,omitempty"`
	Inbound       int64    `json:"inboundCount"`
	Outbound      int64    `json:"outboundCount"`
}

// ChannelSummary is one channel's line in channels.status.
type ChannelSummary struct {
	Configured bool `json:"configured"`
	Running    bool `json:"running"`
	Connected  bool `json:"connected"`
}

// ChannelStatus is one channel with its accounts, as the daemon reports
// it.
type ChannelStatus struct {
	Channel  string
	Accounts []ChannelAccount
}

// ChannelsStatusResult is channels.status's result.
type ChannelsStatusResult struct {
	Ts              int64                       `json:"ts"`
	ChannelOrder    []string                    `json:"channelOrder"`
	Channels        map[string]ChannelSummary   `json:"channels"`
	ChannelAccounts map[string][]ChannelAccount `json:"channelAccounts"`
}
