package cli

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestWriteChannels(t *testing.T) {
	var b strings.Builder
	if err := writeChannels(&b, wire.ChannelsStatusResult{}); err != nil || !strings.Contains(b.String(), "No chat channels configured") {
		t.Fatalf("empty = %q %v", b.String(), err)
	}
	b.Reset()
	res := wire.ChannelsStatusResult{ChannelOrder: []string{"irc"}, ChannelAccounts: map[string][]wire.ChannelAccount{"irc": {{
		AccountID: "default", State: "backoff", LastError: "irc: connect\nrefused", Server: "irc.test:6667", Nick: "sbbot",
		Rooms: []string{"#a", "#b"}, Reconnects: 2, Inbound: 5, Outbound: 7,
	}}}}
	if err := writeChannels(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"CHANNEL", "irc", "default", "backoff (irc: connect", "irc.test:6667", "sbbot", "#a,#b", "2", "5", "7"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") != 2 {
		t.Errorf("want a header and one row:\n%s", out)
	}
}
