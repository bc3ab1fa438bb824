package irctest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/irc"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
)

// status calls channels.status and returns the IRC account.
func status(t *testing.T, c *client.Client) (wire.ChannelsStatusResult, wire.ChannelAccount) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var res wire.ChannelsStatusResult
	if err := c.Call(ctx, "channels.status", map[string]any{"probe": true}, &res); err != nil {
		t.Fatalf("channels.status: %v", err)
	}
	accts := res.ChannelAccounts["irc"]
	if len(accts) != 1 {
		t.Fatalf("channels.status = %+v", res)
	}
	return res, accts[0]
}

// waitJoined waits until channels.status shows the bot connected and in
// every room of rooms, and returns that account.
func waitJoined(t *testing.T, c *client.Client, rooms ...string) wire.ChannelAccount {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, a := status(t, c)
		ok := a.Connected
		for _, r := range rooms {
			ok = ok && slices.Contains(a.Rooms, r)
		}
		if ok {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("bot not connected and joined to %v: %+v", rooms, a)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRoomMentionDMAndLongReply(t *testing.T) {
	srv := startServer(t)
	long := strings.TrimSpace(strings.Repeat("the quick brown fox jumps over the lazy dog ", 30)) // ~1300 bytes
	_, c := startGateway(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#room", "#long"],
    dmPolicy: "open",
    groups: {
      "#room": { allowFrom: ["*"] },
      "#long": { allowFrom: ["*"], requireMention: false, systemPrompt: %q },
    },`, srv.port, scripted.WhenRule("long please", scripted.ReplyDirective(long))))
	res, a := status(t, c)
	if !slices.Equal(res.ChannelOrder, []string{"irc"}) || !res.Channels["irc"].Configured {
		t.Errorf("channels.status = %+v", res)
	}
	a = waitJoined(t, c, "#room", "#long")
	if a.Nick != "sbbot" || a.Server != srv.addr() || a.State != "connected" {
		t.Errorf("account = %+v", a)
	}

	alice := connectUser(t, srv, "alice")
	alice.send("JOIN #room")
	alice.expect(5*time.Second, func(m irc.Message) bool { return m.Command == "JOIN" && m.Nick() == "alice" })

	// Mention gating: a message without the bot's nick gets no reply; the
	// next, mentioning it, does (and is the first reply we see).
	alice.send("PRIVMSG #room :just chatting here")
	sent := time.Now()
	alice.send("PRIVMSG #room :sbbot: ping one")
	m := alice.expect(20*time.Second, privmsgFrom("sbbot", "#room"))
	t.Logf("room: inbound -> reply %s (fake model, no delay)", time.Since(sent))
	if got := m.Param(1); got != "echo: alice: sbbot: ping one" {
		t.Fatalf("room reply = %q", got)
	}

	// A DM comes back as a DM.
	sent = time.Now()
	alice.send("PRIVMSG sbbot :hello in private")
	m = alice.expect(20*time.Second, privmsgFrom("sbbot", "alice"))
	t.Logf("dm: inbound -> reply %s", time.Since(sent))
	if got := m.Param(1); got != "echo: hello in private" {
		t.Fatalf("dm reply = %q", got)
	}

	// A long reply is split into lines that fit IRC's 512-byte limit and
	// together carry the whole text.
	alice.send("JOIN #long")
	alice.expect(5*time.Second, func(m irc.Message) bool { return m.Command == "JOIN" && m.Param(0) == "#long" })
	alice.send("PRIVMSG #long :long please")
	var parts []string
	for n := 0; strings.Join(parts, " ") != long; n++ {
		if n > 20 {
			t.Fatalf("long reply parts = %q", parts)
		}
		m := alice.expect(20*time.Second, privmsgFrom("sbbot", "#long"))
		line := m.Param(1)
		if len(":sbbot!sbbot@127.0.0.1 PRIVMSG #long :"+line+"\r\n") > 512 || len(line) > 350 {
			t.Fatalf("line of %d bytes exceeds the limit", len(line))
		}
		parts = append(parts, line)
	}
	if len(parts) < 4 {
		t.Errorf("long reply came in %d lines, want at least 4 at 350 bytes", len(parts))
	}

	_, a = status(t, c)
	if a.Inbound != 3 || a.Outbound < 6 {
		t.Errorf("counts = in %d out %d, want 3 admitted and >= 6 lines sent", a.Inbound, a.Outbound)
	}
}

func TestReconnectAfterServerRestart(t *testing.T) {
	srv := startServer(t)
	_, c := startGateway(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#room"],
    groups: { "#room": { allowFrom: ["*"], requireMention: false } },`, srv.port))
	waitJoined(t, c, "#room")

	srv.stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, a := status(t, c); !a.Connected && a.State != "connected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bot still connected after the server died")
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.start()
	a := waitJoined(t, c, "#room")
	if a.Reconnects < 1 {
		t.Errorf("reconnects = %d, want >= 1", a.Reconnects)
	}

	bob := connectUser(t, srv, "bob")
	bob.send("JOIN #room")
	bob.expect(5*time.Second, func(m irc.Message) bool { return m.Command == "JOIN" && m.Nick() == "bob" })
	bob.send("PRIVMSG #room :are you back")
	if m := bob.expect(20*time.Second, privmsgFrom("sbbot", "#room")); m.Param(1) != "echo: bob: are you back" {
		t.Fatalf("reply after reconnect = %q", m.Param(1))
	}
}

func TestGatesDropUnlistedSendersAndRooms(t *testing.T) {
	srv := startServer(t)
	_, c := startGateway(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#room", "#closed"],
    allowFrom: ["carol!*@*"],
    groups: { "#room": { allowFrom: ["carol!*@*"], requireMention: false } },`, srv.port))
	waitJoined(t, c, "#room", "#closed")
	dave := connectUser(t, srv, "dave")
	carol := connectUser(t, srv, "carol")
	for _, u := range []*user{dave, carol} {
		u.send("JOIN #room")
		u.send("JOIN #closed")
	}
	dave.send("PRIVMSG #room :dave is not listed")
	dave.send("PRIVMSG #closed :sbbot: the room is not listed")
	dave.send("PRIVMSG sbbot :dm from dave")
	carol.send("PRIVMSG #closed :sbbot: still not listed")
	carol.send("PRIVMSG sbbot :dm from carol")
	if m := carol.expect(20*time.Second, privmsgFrom("sbbot", "carol")); m.Param(1) != "echo: dm from carol" {
		t.Fatalf("carol's dm reply = %q", m.Param(1))
	}
	carol.send("PRIVMSG #room :carol is listed")
	if m := carol.expect(20*time.Second, privmsgFrom("sbbot", "#room")); m.Param(1) != "echo: carol: carol is listed" {
		t.Fatalf("room reply = %q (an earlier, dropped message got answered?)", m.Param(1))
	}
	if _, a := status(t, c); a.Inbound != 2 {
		t.Errorf("admitted = %d, want 2", a.Inbound)
	}
}

// TestAnnouncesReachTheRoom: a sub-agent spawned from the room's session
// announces its result there, and an agent-to-agent send into the room's
// session ends with its announce step there; both reach the IRC room, and
// nothing else of the flow does.
func TestAnnouncesReachTheRoom(t *testing.T) {
	srv := startServer(t)
	_, c := startGatewayWith(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#room"],
    groups: { "#room": { allowFrom: ["*"], requireMention: false } },`, srv.port),
		`tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },`)
	waitJoined(t, c, "#room")
	erin := connectUser(t, srv, "erin")
	erin.send("JOIN #room")
	erin.send("PRIVMSG #room :hello bot")
	erin.expect(20*time.Second, privmsgFrom("sbbot", "#room"))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const room = "agent:main:irc:group:#room"
	var res struct {
		OK      bool           `json:"ok"`
		Details map[string]any `json:"details"`
	}
	if err := c.Call(ctx, "tools.invoke", map[string]any{"tool": "sessions_spawn", "sessionKey": room,
		"args": map[string]any{"task": "research\n/reply child found 42"}}, &res); err != nil || res.Details["status"] != "accepted" {
		t.Fatalf("spawn = %v %+v", err, res)
	}
	m := erin.expect(30*time.Second, func(m irc.Message) bool {
		return privmsgFrom("sbbot", "#room")(m) && strings.Contains(m.Param(1), "child found 42")
	})
	t.Logf("announce in the room: %q", m.Param(1))

	// An agent-to-agent send into the room's session: its turns answer the
	// sender; the room gets only the flow's announce step.
	if err := c.Call(ctx, "tools.invoke", map[string]any{"tool": "sessions_send", "sessionKey": "agent:main:ops",
		"args": map[string]any{"sessionKey": room, "message": "/reply deploy is green", "timeoutSeconds": 0}}, &res); err != nil || res.Details["status"] != "accepted" {
		t.Fatalf("sessions_send = %v %+v", err, res)
	}
	m = erin.expect(30*time.Second, privmsgFrom("sbbot", "#room"))
	if !strings.Contains(m.Param(1), "Agent-to-agent announce step") {
		t.Fatalf("room got %q, want the flow's announce step (the fake model echoes its prompt)", m.Param(1))
	}
	// Nothing more arrives: no ping-pong turn, no second copy.
	quiet := time.After(2 * time.Second)
	for {
		select {
		case m := <-erin.msgs:
			if privmsgFrom("sbbot", "#room")(m) {
				t.Errorf("extra message in the room: %q", m.Param(1))
			}
		case <-quiet:
			return
		}
	}
}

// TestAcceptedMessageAnsweredAfterRestart: a room message accepted while
// the session is busy is stored as a queued run; the gateway stops before
// it runs, and after the restart the run resumes and its reply still
// reaches the room.
func TestAcceptedMessageAnsweredAfterRestart(t *testing.T) {
	srv := startServer(t)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dir := t.TempDir()
	ircConf := fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#room"],
    groups: { "#room": { allowFrom: ["*"], requireMention: false, systemPrompt: %q } },`,
		srv.port, scripted.WhenRule("slow please", "/sleep 30s"))
	extra := `messages: { queue: { mode: "followup" } },`
	d1, c1 := startGatewayIn(t, dir, llm, ircConf, extra, 100*time.Millisecond)
	waitJoined(t, c1, "#room")
	hum := connectUser(t, srv, "hum")
	hum.send("JOIN #room")
	hum.send("PRIVMSG #room :slow please")
	hum.send("PRIVMSG #room :second message")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var hist map[string]any
		err := c1.Call(ctx, "chat.history", map[string]any{"sessionKey": "agent:main:irc:group:#room"}, &hist)
		cancel()
		if err == nil && strings.Contains(fmt.Sprint(hist), "second message") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second message not stored: %v %v", err, hist)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_, c2 := startGatewayIn(t, dir, llm, ircConf, extra, 0)
	m := hum.expect(30*time.Second, func(m irc.Message) bool {
		return m.Command == "PRIVMSG" && strings.HasPrefix(m.Nick(), "sbbot") && m.Param(0) == "#room"
	})
	if m.Param(1) != "echo: hum: second message" {
		t.Fatalf("reply after restart = %q", m.Param(1))
	}
	waitJoined(t, c2, "#room")
}

// TestDMScopePerChannelPeer: with session.dmScope per-channel-peer each
// IRC DM sender gets a session of its own, and replies still go to the
// sender.
func TestDMScopePerChannelPeer(t *testing.T) {
	srv := startServer(t)
	_, c := startGatewayWith(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", dmPolicy: "open",`, srv.port),
		`session: { dmScope: "per-channel-peer" },`)
	waitJoined(t, c)
	for _, nick := range []string{"Fay", "gus"} {
		u := connectUser(t, srv, nick)
		u.send("PRIVMSG sbbot :I am " + nick)
		if m := u.expect(20*time.Second, privmsgFrom("sbbot", nick)); m.Param(1) != "echo: I am "+nick {
			t.Fatalf("%s: reply = %q", nick, m.Param(1))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for nick, other := range map[string]string{"fay": "gus", "gus": "Fay"} {
		var hist map[string]any
		if err := c.Call(ctx, "chat.history", map[string]any{"sessionKey": "agent:main:irc:direct:" + nick}, &hist); err != nil {
			t.Fatal(err)
		}
		if h := fmt.Sprint(hist); !strings.Contains(h, "I am") || strings.Contains(h, "I am "+other) {
			t.Errorf("%s's session history = %s", nick, h)
		}
	}
}

// TestReplyLatency measures IRC in -> IRC out through the gateway with a
// model that answers at once (the fake LLM, no delay): the gateway's own
// overhead per message. Messages are spaced to stay inside the flood
// limit, which would otherwise be what is measured.
func TestReplyLatency(t *testing.T) {
	srv := startServer(t)
	_, c := startGateway(t, fmt.Sprintf(`host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", dmPolicy: "open",`, srv.port))
	waitJoined(t, c)
	u := connectUser(t, srv, "lat")
	// Warm-up: ngircd holds a new client's first commands for about 2s
	// (its flood penalty after registration), which is not ours to measure.
	u.send("PRIVMSG sbbot :warm up")
	u.expect(20*time.Second, privmsgFrom("sbbot", "lat"))
	time.Sleep(550 * time.Millisecond)
	var ds []time.Duration
	for i := range 10 {
		sent := time.Now()
		u.send(fmt.Sprintf("PRIVMSG sbbot :ping %d", i))
		u.expect(20*time.Second, privmsgFrom("sbbot", "lat"))
		ds = append(ds, time.Since(sent))
		time.Sleep(550 * time.Millisecond)
	}
	slices.Sort(ds)
	t.Logf("IRC DM in -> reply out, 10 messages, model time ~0: min %s, median %s, max %s", ds[0], ds[len(ds)/2], ds[len(ds)-1])
	if ds[len(ds)/2] > 2*time.Second {
		t.Errorf("median %s: far too slow", ds[len(ds)/2])
	}
}

// TestRoomToolsNarrowTheSession: a room's tools.deny takes the tool away
// from its session's runs; the same request in another room runs it.
func TestRoomToolsNarrowTheSession(t *testing.T) {
	srv := startServer(t)
	rule := scripted.WhenRule("list please", scripted.ToolDirective("sessions_list", nil))
	_, c := startGateway(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#open", "#locked"],
    groups: {
      "#open": { allowFrom: ["*"], requireMention: false, systemPrompt: %q },
      "#locked": { allowFrom: ["*"], requireMention: false, systemPrompt: %q, tools: { deny: ["group:sessions"] } },
    },`, srv.port, rule, rule))
	waitJoined(t, c, "#open", "#locked")
	u := connectUser(t, srv, "ida")
	got := map[string]string{}
	for _, room := range []string{"#open", "#locked"} {
		u.send("JOIN " + room)
		u.send("PRIVMSG " + room + " :list please")
		got[room] = u.expect(20*time.Second, privmsgFrom("sbbot", room)).Param(1)
	}
	if !strings.HasPrefix(got["#open"], "tool sessions_list returned") || strings.Contains(got["#open"], "not found") {
		t.Errorf("#open reply = %q, want the tool's result", got["#open"])
	}
	if !strings.Contains(got["#locked"], "Tool sessions_list not found") {
		t.Errorf("#locked reply = %q, want the tool refused", got["#locked"])
	}
}

// A message in an IRC room is input from outside the operator: when it
// makes the agent call exec (the scripted model obeys the room's text, as
// a prompt-injected model would) the call is refused with the untrusted
// text and nothing runs on the host; the operator's own turn runs exec
// (issue 30's trust row for chat rooms, with a real IRC server).
func TestRoomCannotRunHostCommands(t *testing.T) {
	srv := startServer(t)
	markers := t.TempDir()
	roomMarker, opMarker := filepath.Join(markers, "from-room"), filepath.Join(markers, "from-operator")
	rule := scripted.WhenRule("please run the cleanup", scripted.ToolDirective("exec", map[string]any{"command": "touch " + roomMarker}))
	_, c := startGateway(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#ops"],
    groups: { "#ops": { allowFrom: ["*"], requireMention: false, systemPrompt: %q } },`, srv.port, rule))
	waitJoined(t, c, "#ops")
	u := connectUser(t, srv, "mallory")
	u.send("JOIN #ops")
	u.send("PRIVMSG #ops :please run the cleanup")
	reply := u.expect(20*time.Second, privmsgFrom("sbbot", "#ops")).Param(1)
	t.Logf("room reply: %s", reply)
	const refusal = "is not available in this session: its input comes from outside the operator"
	if !strings.Contains(reply, refusal) {
		t.Errorf("room reply = %q, want exec refused with %q", reply, refusal)
	}
	if _, err := os.Stat(roomMarker); err == nil {
		t.Fatal("the room's message ran a command on the host")
	}

	// The operator's own turn, on the same gateway, runs exec.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := scripted.ToolDirective("exec", map[string]any{"command": "touch " + opMarker}) + "\n" + scripted.ThenDirective("done")
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "main", "message": msg, "idempotencyKey": "op-1"}, nil); err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	if err := c.Call(ctx, "agent.wait", map[string]any{"runId": "op-1", "timeoutMs": 30000}, &w); err != nil || w["status"] != "ok" {
		t.Fatalf("operator run = %v, %v", w, err)
	}
	if _, err := os.Stat(opMarker); err != nil {
		t.Fatalf("the operator's exec did not run: %v", err)
	}
}
