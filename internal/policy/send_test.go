package policy

import "testing"

func TestResolveSend(t *testing.T) {
	deny := func(m SendMatch) SendRule { return SendRule{Action: "deny", Match: m} }
	allow := func(m SendMatch) SendRule { return SendRule{Action: "allow", Match: m} }
	cfg := func(def string, rules ...SendRule) *SendPolicyConfig {
		return &SendPolicyConfig{Default: def, Rules: rules}
	}
	tests := []struct {
		name string
		in   SendInput
		want Decision
	}{
		// Step 1-2: override and missing config.
		{"no config allows", SendInput{SessionKey: "agent:main:main"}, DecisionAllow},
		{"no config, override deny", SendInput{EntryOverride: "deny"}, DecisionDeny},
		{"override normalized", SendInput{Config: cfg("deny"), EntryOverride: " ALLOW "}, DecisionAllow},
		{"override beats matching deny rule", SendInput{Config: cfg("", deny(SendMatch{})), EntryOverride: "allow"}, DecisionAllow},
		{"invalid override ignored", SendInput{Config: cfg("deny"), EntryOverride: "maybe"}, DecisionDeny},
		{"invalid override, no config", SendInput{EntryOverride: "maybe"}, DecisionAllow},

		// Step 5: default.
		{"empty config allows", SendInput{Config: cfg("")}, DecisionAllow},
		{"default deny", SendInput{Config: cfg("deny")}, DecisionDeny},
		{"default normalized", SendInput{Config: cfg(" Deny ")}, DecisionDeny},
		{"invalid default allows", SendInput{Config: cfg("block")}, DecisionAllow},

		// Step 4: rule scan.
		{"empty match matches everything", SendInput{Config: cfg("", deny(SendMatch{})), SessionKey: "x"}, DecisionDeny},
		{"empty match, empty key", SendInput{Config: cfg("", deny(SendMatch{}))}, DecisionDeny},
		{"missing action is allow", SendInput{Config: cfg("deny", SendRule{})}, DecisionAllow},
		{"invalid action is allow", SendInput{Config: cfg("deny", SendRule{Action: "block"})}, DecisionAllow},
		{"action normalized", SendInput{Config: cfg("", SendRule{Action: " DENY "})}, DecisionDeny},
		{"allow match beats default deny",
			SendInput{Config: cfg("deny", allow(SendMatch{Channel: "discord"})), Channel: "discord"}, DecisionAllow},
		{"any matching deny wins after allow",
			SendInput{Config: cfg("", allow(SendMatch{Channel: "discord"}), deny(SendMatch{KeyPrefix: "discord:"})),
				SessionKey: "agent:main:discord:group:dev"}, DecisionDeny},
		{"deny first also wins",
			SendInput{Config: cfg("", deny(SendMatch{KeyPrefix: "discord:"}), allow(SendMatch{Channel: "discord"})),
				SessionKey: "agent:main:discord:group:dev"}, DecisionDeny},
		{"non-matching deny then default",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "slack"})), Channel: "discord"}, DecisionAllow},

		// Channel fact.
		{"param channel normalized", SendInput{Config: cfg("", deny(SendMatch{Channel: " Discord "})), Channel: " DISCORD "}, DecisionDeny},
		{"param channel wins over entry",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord"})), Channel: "slack", EntryChannel: "discord"}, DecisionAllow},
		{"blank param channel falls back to entry",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord"})), Channel: "  ", EntryChannel: "Discord"}, DecisionDeny},
		{"entry channel wins over last channel",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord"})), EntryChannel: "slack", EntryLastChannel: "discord"}, DecisionAllow},
		{"entry last channel",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord"})), EntryLastChannel: "discord"}, DecisionDeny},
		{"channel derived from canonical group key",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord"})), SessionKey: "agent:main:discord:group:dev"}, DecisionDeny},
		{"channel derived from channel key",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "slack"})), SessionKey: "agent:ops:slack:channel:c1"}, DecisionDeny},
		{"channel derived from legacy key",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord"})), SessionKey: "discord:group:dev"}, DecisionDeny},
		{"no channel from direct key",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "telegram"})), SessionKey: "agent:main:telegram:direct:42"}, DecisionAllow},
		{"no channel from main key",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "main"})), SessionKey: "agent:main:main"}, DecisionAllow},

		// Chat type fact.
		{"match dm is direct", SendInput{Config: cfg("", deny(SendMatch{ChatType: "dm"})), ChatType: "direct"}, DecisionDeny},
		{"param dm is direct", SendInput{Config: cfg("", deny(SendMatch{ChatType: "direct"})), ChatType: " DM "}, DecisionDeny},
		{"entry chat type when param empty",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "group"})), EntryChatType: "group"}, DecisionDeny},
		{"param chat type wins over entry",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "group"})), ChatType: "direct", EntryChatType: "group"}, DecisionAllow},
		{"invalid param chat type does not fall back to entry",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "group"})), ChatType: "room", EntryChatType: "group",
				SessionKey: "agent:main:telegram:direct:1"}, DecisionAllow},
		{"invalid param chat type falls back to key",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "direct"})), ChatType: "room", EntryChatType: "group",
				SessionKey: "agent:main:telegram:direct:1"}, DecisionDeny},
		{"chat type derived from key",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "group"})), SessionKey: "agent:main:discord:group:dev"}, DecisionDeny},
		{"chat type derived from legacy dm key",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "direct"})), SessionKey: "agent:main:telegram:dm:7"}, DecisionDeny},
		{"chat type derived channel",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "channel"})), SessionKey: "agent:main:slack:channel:c"}, DecisionDeny},
		{"main key has no chat type",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "direct"})), SessionKey: "agent:main:main"}, DecisionAllow},
		{"invalid match chat type matches everything (quirk)",
			SendInput{Config: cfg("", deny(SendMatch{ChatType: "room"})), SessionKey: "agent:main:main"}, DecisionDeny},

		// Key prefixes.
		{"keyPrefix matches stripped key",
			SendInput{Config: cfg("", deny(SendMatch{KeyPrefix: "discord:"})), SessionKey: "agent:main:discord:group:dev"}, DecisionDeny},
		{"keyPrefix matches raw key",
			SendInput{Config: cfg("", deny(SendMatch{KeyPrefix: "agent:main:cron:"})), SessionKey: "agent:main:cron:job-1"}, DecisionDeny},
		{"keyPrefix normalized, key lower-cased",
			SendInput{Config: cfg("", deny(SendMatch{KeyPrefix: " CRON: "})), SessionKey: "agent:Main:Cron:Job"}, DecisionDeny},
		{"keyPrefix no match",
			SendInput{Config: cfg("", deny(SendMatch{KeyPrefix: "slack:"})), SessionKey: "agent:main:discord:group:dev"}, DecisionAllow},
		{"rawKeyPrefix ignores stripped key",
			SendInput{Config: cfg("", deny(SendMatch{RawKeyPrefix: "discord:"})), SessionKey: "agent:main:discord:group:dev"}, DecisionAllow},
		{"rawKeyPrefix matches legacy key",
			SendInput{Config: cfg("", deny(SendMatch{RawKeyPrefix: "discord:"})), SessionKey: "discord:group:dev"}, DecisionDeny},
		{"rawKeyPrefix case-insensitive",
			SendInput{Config: cfg("", deny(SendMatch{RawKeyPrefix: "AGENT:OPS:"})), SessionKey: "agent:ops:main"}, DecisionDeny},
		{"rawKeyPrefix other agent",
			SendInput{Config: cfg("", deny(SendMatch{RawKeyPrefix: "agent:ops:"})), SessionKey: "agent:main:main"}, DecisionAllow},

		// Several fields: all present must match.
		{"all fields match",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord", ChatType: "group", KeyPrefix: "discord:group:"})),
				SessionKey: "agent:main:discord:group:dev"}, DecisionDeny},
		{"one field misses",
			SendInput{Config: cfg("", deny(SendMatch{Channel: "discord", ChatType: "channel"})),
				SessionKey: "agent:main:discord:group:dev"}, DecisionAllow},
		{"blank match fields are absent",
			SendInput{Config: cfg("", deny(SendMatch{Channel: " ", ChatType: " ", KeyPrefix: " ", RawKeyPrefix: " "})),
				SessionKey: "x"}, DecisionDeny},

		// The spec's typical setup: deny groups by default, allow one.
		{"deny groups, allow a channel: allowed one",
			SendInput{Config: cfg("allow", deny(SendMatch{ChatType: "group"}), allow(SendMatch{Channel: "discord"})),
				SessionKey: "agent:main:discord:group:dev"}, DecisionDeny},
		{"deny groups: direct still allowed",
			SendInput{Config: cfg("allow", deny(SendMatch{ChatType: "group"})),
				SessionKey: "agent:main:telegram:direct:1"}, DecisionAllow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResolveSend(tt.in); got != tt.want {
				t.Errorf("ResolveSend(%+v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSendBlockedMessage(t *testing.T) {
	if SendBlockedMessage != "send blocked by session policy" {
		t.Errorf("SendBlockedMessage = %q", SendBlockedMessage)
	}
}

func TestNormalizeSendPolicy(t *testing.T) {
	tests := []struct {
		in   string
		want Decision
		ok   bool
	}{
		{"allow", DecisionAllow, true},
		{"deny", DecisionDeny, true},
		{" ALLOW\n", DecisionAllow, true},
		{"\u00a0Deny\ufeff", DecisionDeny, true},
		{"", "", false},
		{"on", "", false},
		{"off", "", false},
		{"inherit", "", false},
		{"al low", "", false},
	}
	for _, tt := range tests {
		got, ok := NormalizeSendPolicy(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NormalizeSendPolicy(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseSendCommand(t *testing.T) {
	var (
		on      = SendCommand{Override: DecisionAllow}
		off     = SendCommand{Override: DecisionDeny}
		inherit = SendCommand{}
		usage   = SendCommand{Usage: true}
	)
	tests := []struct {
		text string
		want SendCommand
		ok   bool
	}{
		{"/send on", on, true},
		{"/send allow", on, true},
		{"/send ON", on, true},
		{"/SEND Allow", on, true},
		{"/send off", off, true},
		{"/send deny", off, true},
		{"/Send OFF", off, true},
		{"/send inherit", inherit, true},
		{"/send default", inherit, true},
		{"/send reset", inherit, true},
		{"/senD ReSeT", inherit, true},
		{"/send", usage, true},
		{"/SEND", usage, true},
		{"/send maybe", usage, true},
		{"/send yes", usage, true},
		{"/send x", usage, true},
		{"  /send off  ", off, true},
		{"\n/send on\n", on, true},
		{"/send\ton", on, true},
		{"/send  \t off", off, true},
		{"/send\u00a0off", off, true},
		{"/send\u3000on", on, true},
		{"/send on \t", on, true},
		{"/send   ", usage, true},
		{"\ufeff/send", usage, true},

		{"", SendCommand{}, false},
		{"   ", SendCommand{}, false},
		{"/sen", SendCommand{}, false},
		{"/sendon", SendCommand{}, false},
		{"/sending", SendCommand{}, false},
		{"/send on now", SendCommand{}, false},
		{"/send on!", SendCommand{}, false},
		{"/send 1", SendCommand{}, false},
		{"/send on1", SendCommand{}, false},
		{"/send é", SendCommand{}, false},
		{"/send o_n", SendCommand{}, false},
		{"send on", SendCommand{}, false},
		{"hello /send on", SendCommand{}, false},
		{"//send on", SendCommand{}, false},
		{"/ſend on", SendCommand{}, false},
		{"/send oK", usage, true},
		{"/send oK\u212a", SendCommand{}, false}, // Kelvin sign is not [a-zA-Z]
		{"/send\u0085on", SendCommand{}, false},  // NEL is not JavaScript white space
		{"\u0085/send on", SendCommand{}, false},
		{"/send\u180eon", SendCommand{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseSendCommand(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseSendCommand(%q) = %+v, %v; want %+v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSendCommandReply(t *testing.T) {
	tests := []struct {
		text string
		want string
	}{
		{"/send on", "⚙️ Send policy set to on."},
		{"/send allow", "⚙️ Send policy set to on."},
		{"/send off", "⚙️ Send policy set to off."},
		{"/send deny", "⚙️ Send policy set to off."},
		{"/send inherit", "⚙️ Send policy set to inherit."},
		{"/send default", "⚙️ Send policy set to inherit."},
		{"/send reset", "⚙️ Send policy set to inherit."},
		{"/send", "⚙️ Usage: /send on|off|inherit"},
		{"/send nope", "⚙️ Usage: /send on|off|inherit"},
	}
	for _, tt := range tests {
		cmd, ok := ParseSendCommand(tt.text)
		if !ok {
			t.Fatalf("ParseSendCommand(%q) not a command", tt.text)
		}
		if got := cmd.Reply(); got != tt.want {
			t.Errorf("%q: Reply() = %q, want %q", tt.text, got, tt.want)
		}
	}
	if SendUsageReply != "⚙️ Usage: /send on|off|inherit" {
		t.Errorf("SendUsageReply = %q", SendUsageReply)
	}
}

func TestNormalizeSendPolicyPatch(t *testing.T) {
	const errText = `invalid sendPolicy (use "allow"|"deny")`
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		in      any
		want    string
		wantErr bool
	}{
		{"allow", "allow", "allow", false},
		{"deny", "deny", "deny", false},
		{"normalized", " Deny ", "deny", false},
		{"nil clears", nil, "", false},
		{"nil pointer clears", (*string)(nil), "", false},
		{"pointer", str("allow"), "allow", false},
		{"pointer invalid", str("on"), "", true},
		{"empty", "", "", true},
		{"on is not valid here", "on", "", true},
		{"inherit is not valid here", "inherit", "", true},
		{"number", 1, "", true},
		{"bool", true, "", true},
		{"slice", []string{"allow"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeSendPolicyPatch(tt.in)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("NormalizeSendPolicyPatch(%#v) = %q, %v; want %q, err %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err != nil && err.Error() != errText {
				t.Errorf("error = %q, want %q", err, errText)
			}
		})
	}
}
