package gateway

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/store"
)

func TestResolveSendPolicy(t *testing.T) {
	rule := func(action string, m *config.SendPolicyMatch) config.SendPolicyRule {
		return config.SendPolicyRule{Action: action, Match: m}
	}
	denyDiscordGroups := &config.SendPolicy{Rules: []config.SendPolicyRule{
		rule("deny", &config.SendPolicyMatch{Channel: "discord", ChatType: "group"}),
	}}
	tests := []struct {
		name     string
		policy   *config.SendPolicy
		entry    *store.Session
		key      string
		channel  string
		chatType string
		want     string
	}{
		{name: "no config allows", key: "agent:main:main", want: "allow"},
		{name: "entry deny wins without config", entry: &store.Session{SendPolicy: "deny"}, key: "agent:main:main", want: "deny"},
		{name: "entry override is normalized", entry: &store.Session{SendPolicy: " DENY "}, key: "k", want: "deny"},
		{name: "entry allow beats a config deny", policy: &config.SendPolicy{Default: "deny"}, entry: &store.Session{SendPolicy: "allow"}, key: "k", want: "allow"},
		{name: "invalid entry value is ignored", policy: &config.SendPolicy{Default: "deny"}, entry: &store.Session{SendPolicy: "maybe"}, key: "k", want: "deny"},
		{name: "default deny", policy: &config.SendPolicy{Default: "deny"}, key: "agent:main:main", want: "deny"},
		{name: "default is normalized", policy: &config.SendPolicy{Default: " Deny"}, key: "k", want: "deny"},
		{name: "invalid default allows", policy: &config.SendPolicy{Default: "nope"}, key: "k", want: "allow"},
		{name: "empty config allows", policy: &config.SendPolicy{}, key: "k", want: "allow"},
		{name: "channel and chat type from the key", policy: denyDiscordGroups, key: "agent:main:discord:group:dev", want: "deny"},
		{name: "chat type mismatch", policy: denyDiscordGroups, key: "agent:main:discord:channel:dev", want: "allow"},
		{name: "channel mismatch", policy: denyDiscordGroups, key: "agent:main:slack:group:dev", want: "allow"},
		{name: "channel param wins over the key", policy: denyDiscordGroups, key: "agent:main:slack:group:dev", channel: "Discord", want: "deny"},
		{name: "entry channel", policy: denyDiscordGroups, entry: &store.Session{Channel: "discord", ChatType: "group"}, key: "agent:main:x", want: "deny"},
		{name: "entry lastChannel", policy: denyDiscordGroups, entry: &store.Session{LastChannel: "discord", ChatType: "group"}, key: "agent:main:x", want: "deny"},
		{name: "legacy dm chat type", key: "agent:main:x", chatType: "dm", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{ChatType: "direct"})}}},
		{name: "dm in the rule", key: "agent:main:telegram:direct:42", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{ChatType: "dm"})}}},
		{name: "keyPrefix matches the stripped key", key: "agent:main:cron:job-1", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{KeyPrefix: "cron:"})}}},
		{name: "keyPrefix matches the raw key", key: "agent:main:cron:job-1", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{KeyPrefix: "AGENT:main:"})}}},
		{name: "rawKeyPrefix does not match the stripped key", key: "agent:main:cron:job-1", want: "allow",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{RawKeyPrefix: "cron:"})}}},
		{name: "rawKeyPrefix", key: "agent:main:cron:job-1", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{RawKeyPrefix: "agent:main:cron"})}}},
		{name: "any matching deny wins over an earlier allow", key: "agent:main:discord:group:dev", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{
				rule("allow", &config.SendPolicyMatch{Channel: "discord"}),
				rule("deny", &config.SendPolicyMatch{ChatType: "group"}),
			}}},
		{name: "a matching allow beats the default", key: "agent:main:discord:group:dev", want: "allow",
			policy: &config.SendPolicy{Default: "deny", Rules: []config.SendPolicyRule{rule("allow", &config.SendPolicyMatch{Channel: "discord"})}}},
		{name: "a rule without match matches everything", key: "k", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", nil)}}},
		{name: "missing action means allow", key: "k", want: "allow",
			policy: &config.SendPolicy{Default: "deny", Rules: []config.SendPolicyRule{rule("", nil)}}},
		{name: "invalid action means allow", key: "k", want: "allow",
			policy: &config.SendPolicy{Default: "deny", Rules: []config.SendPolicyRule{rule("block", nil)}}},
		{name: "empty match fields are absent", key: "k", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{Channel: "  ", KeyPrefix: ""})}}},
		{name: "unknown chat type never matches a chatType rule", key: "agent:main:main", want: "allow",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("deny", &config.SendPolicyMatch{ChatType: "direct"})}}},
		{name: "match values are trimmed and lower-cased", key: "agent:main:discord:group:dev", want: "deny",
			policy: &config.SendPolicy{Rules: []config.SendPolicyRule{rule("DENY", &config.SendPolicyMatch{Channel: " DISCORD ", ChatType: "Group"})}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolveSendPolicy(tt.policy, tt.entry, tt.key, tt.channel, tt.chatType); got != tt.want {
				t.Errorf("resolveSendPolicy = %q, want %q", got, tt.want)
			}
		})
	}
}
