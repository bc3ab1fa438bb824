package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestSessionMessageEvents: a connection subscribed to a session's
// messages gets each message a run or a post writes there as a
// session.message event, in transcript order, with the session's row;
// other connections get none.
func TestSessionMessageEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	other := e.operator()
	c.ok(wire.MethodSessionsMessagesSubscribe, map[string]any{"key": "main"}, nil)
	other.ok(wire.MethodSessionsSubscribe, map[string]any{}, nil)

	type event struct {
		wire.SessionMessageEvent
		Msg struct {
			Role string `json:"role"`
			Meta struct {
				ID  string `json:"id"`
				Seq int64  `json:"seq"`
			} `json:"__openclaw"`
		}
	}
	next := func() event {
		t.Helper()
		var ev event
		f := c.expectEvent(wire.EventSessionMessage)
		if err := json.Unmarshal(f.Payload, &ev); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(ev.Message, &ev.Msg); err != nil {
			t.Fatal(err)
		}
		if ev.SessionKey != "agent:main:main" || ev.AgentID != "main" || ev.Session == nil || ev.Session.Key != ev.SessionKey ||
			ev.Msg.Meta.ID != ev.MessageID || ev.Msg.Meta.Seq != ev.MessageSeq || ev.MessageID == "" {
			t.Errorf("session.message = %s", f.Payload)
		}
		return ev
	}

	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "sm-1"}, nil)
	user, reply := next(), next()
	if user.Msg.Role != "user" || reply.Msg.Role != "assistant" || reply.MessageSeq <= user.MessageSeq {
		t.Errorf("session.message roles %s (seq %d), %s (seq %d); want user then assistant",
			user.Msg.Role, user.MessageSeq, reply.Msg.Role, reply.MessageSeq)
	}
	var hist wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	if len(hist.Messages) != 2 || string(hist.Messages[0]) != string(user.Message) || string(hist.Messages[1]) != string(reply.Message) {
		t.Errorf("session.message messages differ from chat.history's:\n%s\n%s\nhistory %s", user.Message, reply.Message, hist.Messages)
	}

	// A post (chat.inject) is one message too.
	c.ok(wire.MethodChatInject, map[string]any{"sessionKey": "main", "message": "a note"}, nil)
	if note := next(); note.Msg.Role != "assistant" || note.MessageSeq <= reply.MessageSeq {
		t.Errorf("session.message of chat.inject = %s", note.Message)
	}

	// The unsubscribed connection saw the run end (sessions.changed comes
	// after the run's messages) and no message.
	noMessagesUntilRunEnd(t, other, "an unsubscribed connection got session.message %s")

	// A session-scoped client sending a turn gets the turn's chat events,
	// not session.message (it did not subscribe to the messages).
	sender := e.connectCaps([]string{wire.CapSessionScopedEvents})
	sender.ok(wire.MethodSessionsSubscribe, map[string]any{}, nil)
	sender.ok(wire.MethodChatSend, map[string]any{"sessionKey": "agent:main:scoped", "message": "mine", "idempotencyKey": "sm-s"}, nil)
	noMessagesUntilRunEnd(t, sender, "a scoped sender got session.message %s")

	// Unsubscribed, c gets no more: the next run's end arrives alone.
	c.ok(wire.MethodSessionsMessagesUnsubscribe, map[string]any{"key": "main"}, nil)
	c.ok(wire.MethodSessionsSubscribe, map[string]any{}, nil)
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "again", "idempotencyKey": "sm-2"}, nil)
	noMessagesUntilRunEnd(t, c, "session.message after sessions.messages.unsubscribe: %s")
}

// noMessagesUntilRunEnd reads c's events up to a run's end (the
// sessions.changed of reason lifecycle) and fails on a session.message;
// what names the connection's case in the failure.
func noMessagesUntilRunEnd(t *testing.T, c *client, what string) {
	t.Helper()
	for {
		f := c.nextEvent(10 * time.Second)
		if f.Event == wire.EventSessionMessage {
			t.Fatalf(what, f.Payload)
		}
		var p struct{ Reason string }
		json.Unmarshal(f.Payload, &p)
		if f.Event == wire.EventSessionsChanged && p.Reason == "lifecycle" {
			return
		}
	}
}
