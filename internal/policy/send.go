package policy

import (
	"cmp"
	"errors"
	"strings"

	"github.com/switchboardhq/switchboard/internal/sessionkey"
)

// Decision is the outcome of the send policy: DecisionAllow or DecisionDeny.
type Decision string

// The send-policy decisions; also the only values a session entry's
// sendPolicy override, a rule action and the policy default take.
const (
	DecisionAllow Decision = "allow"
	DecisionDeny  Decision = "deny"
)

// SendPolicyConfig mirrors config session.sendPolicy. The config package has
// its own types; callers convert. A nil *SendPolicyConfig means the policy is
// not configured, and every send is allowed.
type SendPolicyConfig struct {
	// Default is the decision when no rule matches: "allow" or "deny"
	// (trimmed, any case); anything else, including "", means allow.
	Default string
	// Rules are scanned in order; see ResolveSend.
	Rules []SendRule
}

// SendRule is one entry of session.sendPolicy.rules.
type SendRule struct {
	// Action is "allow" or "deny" (trimmed, any case); anything else,
	// including "", means allow.
	Action string
	// Match holds the facts the rule matches on. The zero Match matches
	// every session.
	Match SendMatch
}

// SendMatch holds the optional facts of a SendRule. Values are trimmed and
// lower-cased before comparison; an empty value is absent, and an absent
// field matches anything.
type SendMatch struct {
	// Channel must equal the session's channel fact.
	Channel string
	// ChatType must equal the session's chat type fact: "direct" (or its
	// legacy alias "dm"), "group" or "channel". Quirk kept from the
	// reference: any other value normalizes to absent and so matches
	// every session (config validation rejects such values).
	ChatType string
	// KeyPrefix must be a prefix of the lower-cased session key, or of the
	// lower-cased key without its "agent:<id>:" prefix.
	KeyPrefix string
	// RawKeyPrefix must be a prefix of the lower-cased session key.
	RawKeyPrefix string
}

// SendInput is everything ResolveSend needs to decide one send. Empty
// strings are absent.
type SendInput struct {
	// Config is session.sendPolicy, nil when unset.
	Config *SendPolicyConfig
	// EntryOverride is the session entry's sendPolicy override, "" when
	// the entry has none (or there is no entry).
	EntryOverride string
	// SessionKey is the session's store key.
	SessionKey string
	// Channel and ChatType are facts the caller knows about this send
	// (e.g. the inbound message's channel and chat type).
	Channel  string
	ChatType string
	// EntryChannel, EntryLastChannel and EntryChatType come from the
	// session entry.
	EntryChannel     string
	EntryLastChannel string
	EntryChatType    string
}

// SendBlockedMessage is the error text of the gateway's agent and
// chat.send methods (an INVALID_REQUEST error) when ResolveSend denies the
// target session (docs/spec/reference-behaviour.md §7); auto-reply delivery is
// suppressed silently instead.
const SendBlockedMessage = "send blocked by session policy"

// NormalizeSendPolicy normalizes a stored or configured send-policy value,
// mirroring normalizeSendPolicy: trimmed and lower-cased, "allow" and "deny"
// are valid; anything else gives ok false.
func NormalizeSendPolicy(raw string) (d Decision, ok bool) {
	switch d := Decision(lowerTrim(raw)); d {
	case DecisionAllow, DecisionDeny:
		return d, true
	}
	return "", false
}

// ResolveSend decides whether a send into a session is allowed, mirroring
// resolveSendPolicy (docs/spec/reference-behaviour.md §8):
//
//  1. A valid EntryOverride wins outright.
//  2. No Config: allow.
//  3. Facts: the channel is the first non-blank of Channel, EntryChannel,
//     EntryLastChannel (each trimmed and lower-cased), else the channel
//     derived from the key (sessionkey.ChannelFromKey). The chat type is
//     ChatType, or EntryChatType when ChatType is empty, normalized
//     ("dm" → "direct"); when that is not a valid chat type it is derived
//     from the key (sessionkey.ChatTypeOf, "unknown" meaning none). Note a
//     non-empty but invalid ChatType does not fall back to EntryChatType,
//     as in the reference.
//  4. Rules in order; a rule matches when every present match field does
//     (see SendMatch). A matching deny returns deny at once, so any
//     matching deny wins, even after an earlier matching allow; a
//     matching allow is remembered and the scan goes on.
//  5. Any allow matched: allow; else the normalized Default; else allow.
func ResolveSend(in SendInput) Decision {
	if d, ok := NormalizeSendPolicy(in.EntryOverride); ok {
		return d
	}
	cfg := in.Config
	if cfg == nil {
		return DecisionAllow
	}
	channel := cmp.Or(lowerTrim(in.Channel), lowerTrim(in.EntryChannel),
		lowerTrim(in.EntryLastChannel), sessionkey.ChannelFromKey(in.SessionKey))
	chatType := in.ChatType
	if chatType == "" {
		chatType = in.EntryChatType
	}
	chatType = normalizeChatType(chatType)
	if chatType == "" {
		if ct := sessionkey.ChatTypeOf(in.SessionKey); ct != sessionkey.ChatUnknown {
			chatType = string(ct)
		}
	}
	raw := strings.ToLower(in.SessionKey)
	stripped := sessionkey.StripAgentPrefix(in.SessionKey)

	allowed := false
	for _, rule := range cfg.Rules {
		m := rule.Match
		if v := lowerTrim(m.Channel); v != "" && v != channel {
			continue
		}
		if v := normalizeChatType(m.ChatType); v != "" && v != chatType {
			continue
		}
		if v := lowerTrim(m.RawKeyPrefix); v != "" && !strings.HasPrefix(raw, v) {
			continue
		}
		if v := lowerTrim(m.KeyPrefix); v != "" && !strings.HasPrefix(raw, v) && !strings.HasPrefix(stripped, v) {
			continue
		}
		if action, _ := NormalizeSendPolicy(rule.Action); action == DecisionDeny {
			return DecisionDeny
		}
		allowed = true
	}
	if allowed {
		return DecisionAllow
	}
	if d, ok := NormalizeSendPolicy(cfg.Default); ok {
		return d
	}
	return DecisionAllow
}

// normalizeChatType mirrors normalizeChatType: trimmed and lower-cased,
// "direct" and "dm" give "direct", "group" and "channel" themselves,
// anything else "".
func normalizeChatType(raw string) string {
	switch v := lowerTrim(raw); v {
	case "direct", "dm":
		return "direct"
	case "group", "channel":
		return v
	}
	return ""
}

// The replies of the /send command.
const (
	// SendUsageReply answers a bare /send or one with an unknown token.
	SendUsageReply = "⚙️ Usage: /send on|off|inherit"
	// sendSetReplyPrefix starts the success reply, which ends with the
	// label and ".".
	sendSetReplyPrefix = "⚙️ Send policy set to "
)

// SendCommand is a parsed "/send" message (docs/spec/reference-behaviour.md §8): the
// owner-only text command that sets or clears the session's send-policy
// override. The caller checks that the sender is authorized (unauthorized
// senders are ignored silently: the command is consumed with no reply),
// applies Override when !Usage, and replies with Reply.
type SendCommand struct {
	// Usage is true for a bare "/send" or an unknown token: nothing
	// changes and the reply is SendUsageReply.
	Usage bool
	// Override is the session entry's new sendPolicy: DecisionAllow,
	// DecisionDeny, or "" to clear it (inherit the configured policy).
	// Meaningless when Usage is true.
	Override Decision
}

// Reply returns the reply text: SendUsageReply when c.Usage, else
// "⚙️ Send policy set to <on|off|inherit>.".
func (c SendCommand) Reply() string {
	if c.Usage {
		return SendUsageReply
	}
	label := "inherit"
	switch c.Override {
	case DecisionAllow:
		label = "on"
	case DecisionDeny:
		label = "off"
	}
	return sendSetReplyPrefix + label + "."
}

// ParseSendCommand parses a message as the /send command, mirroring
// parseSendPolicyCommand. ok is false when the message is not the command,
// and the message then goes on to the agent as usual.
//
// The trimmed text must be the whole command,
// ^/send(?:\s+([a-zA-Z]+))?\s*$ case-insensitively (\s as in JavaScript).
// The token, lower-cased: "on" or "allow" sets allow; "off" or "deny" sets
// deny; "inherit", "default" or "reset" clears the override; none or any
// other letters give Usage.
//
//	ParseSendCommand("/send off")   // {Override: "deny"}, true
//	ParseSendCommand("/SEND Reset") // {Override: ""}, true
//	ParseSendCommand("/send maybe") // {Usage: true}, true
//	ParseSendCommand("/send on now") // ok false
//
// The caller passes the command body as its command dispatcher normalized
// it (the reference strips inbound metadata and normalizes the command body
// before matching).
func ParseSendCommand(text string) (cmd SendCommand, ok bool) {
	s := jsTrim(text)
	if !hasPrefixFoldASCII(s, "/send") {
		return SendCommand{}, false
	}
	rest := s[len("/send"):]
	// rest is "" or \s+ followed by optional letters, then \s*; since s is
	// trimmed, trailing white space is already gone.
	body := strings.TrimLeftFunc(rest, isJSSpace)
	if body != "" && body == rest {
		return SendCommand{}, false // "/sendx": no white space after /send
	}
	for i := 0; i < len(body); i++ {
		if c := body[i] | 0x20; c < 'a' || c > 'z' {
			return SendCommand{}, false
		}
	}
	switch strings.ToLower(body) {
	case "on", "allow":
		return SendCommand{Override: DecisionAllow}, true
	case "off", "deny":
		return SendCommand{Override: DecisionDeny}, true
	case "inherit", "default", "reset":
		return SendCommand{}, true
	}
	return SendCommand{Usage: true}, true
}

// errInvalidSendPolicyPatch is the reference's sessions.patch error text.
var errInvalidSendPolicyPatch = errors.New(`invalid sendPolicy (use "allow"|"deny")`)

// NormalizeSendPolicyPatch validates the sendPolicy value of a
// sessions.patch request whose params contain the key (an absent key
// changes nothing and should not reach here). nil, or a nil *string,
// clears the override and gives "". A string, trimmed and lower-cased, must
// be "allow" or "deny" and gives that. Anything else is the error
// `invalid sendPolicy (use "allow"|"deny")`, whose text the gateway returns
// as is.
func NormalizeSendPolicyPatch(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case *string:
		if x == nil {
			return "", nil
		}
		v = *x
	}
	if s, ok := v.(string); ok {
		if d, ok := NormalizeSendPolicy(s); ok {
			return string(d), nil
		}
	}
	return "", errInvalidSendPolicyPatch
}

// hasPrefixFoldASCII reports whether s starts with the lower-case ASCII
// prefix, ignoring the ASCII case of s only (as a JavaScript /i regular
// expression without the u flag does for ASCII letters).
func hasPrefixFoldASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}
