package irctest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/irc"
)

// TestHookReplyReachesTheRoom: a webhook that names a chat (channel irc,
// to #ops) has its run's reply delivered there; a mapped hook's templated
// destination works the same way.
func TestHookReplyReachesTheRoom(t *testing.T) {
	srv := startServer(t)
	d, c := startGatewayWith(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#ops"],
    groups: { "#ops": { allowFrom: ["*"], requireMention: true } },`, srv.port),
		`hooks: { enabled: true, token: "hook-secret", mappings: [
      { match: { path: "deploys" }, messageTemplate: "/reply deploy of {{service}} finished", channel: "irc", to: "#{{room}}" } ] },`)
	waitJoined(t, c, "#ops")
	erin := connectUser(t, srv, "erin")
	erin.send("JOIN #ops")
	erin.expect(10*time.Second, func(m irc.Message) bool { return m.Command == "JOIN" })
	base := "http://" + d.Addrs[0].String()
	hook := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer hook-secret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("%s = %d", path, res.StatusCode)
		}
	}
	hook("/hooks/agent", `{"message":"/reply build 812 is green","channel":"irc","to":"#ops"}`)
	erin.expect(20*time.Second, func(m irc.Message) bool {
		return privmsgFrom("sbbot", "#ops")(m) && m.Param(1) == "build 812 is green"
	})
	hook("/hooks/deploys", `{"service":"api","room":"ops"}`)
	erin.expect(20*time.Second, func(m irc.Message) bool {
		return privmsgFrom("sbbot", "#ops")(m) && m.Param(1) == "deploy of api finished"
	})
}

// TestCronDeliveryReachesTheRoom: a cron job whose delivery names a chat
// (mode announce, channel irc, to #ops) has its run's reply posted there.
func TestCronDeliveryReachesTheRoom(t *testing.T) {
	srv := startServer(t)
	_, c := startGatewayWith(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#ops"],
    groups: { "#ops": { allowFrom: ["*"], requireMention: true } },`, srv.port), ``)
	waitJoined(t, c, "#ops")
	erin := connectUser(t, srv, "erin")
	erin.send("JOIN #ops")
	erin.expect(10*time.Second, func(m irc.Message) bool { return m.Command == "JOIN" })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var job struct {
		ID string `json:"id"`
	}
	if err := c.Call(ctx, "cron.add", map[string]any{
		"name": "standup", "schedule": map[string]any{"kind": "every", "everyMs": 3600000},
		"sessionTarget": "isolated", "payload": map[string]any{"kind": "agentTurn", "message": "/reply standup in 5 minutes"},
		"delivery": map[string]any{"mode": "announce", "channel": "irc", "to": "#ops"},
	}, &job); err != nil || job.ID == "" {
		t.Fatalf("cron.add: %v %+v", err, job)
	}
	if err := c.Call(ctx, "cron.run", map[string]any{"id": job.ID}, nil); err != nil {
		t.Fatalf("cron.run: %v", err)
	}
	erin.expect(20*time.Second, func(m irc.Message) bool {
		return privmsgFrom("sbbot", "#ops")(m) && m.Param(1) == "standup in 5 minutes"
	})
}
