package gateway

import (
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func (e *env) connectCaps(caps []string) *client {
	e.t.Helper()
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	p := connectParams(testToken, wire.ScopeRead, wire.ScopeWrite)
	p["caps"] = caps
	if f := c.call(wire.MethodConnect, p); !f.OK {
		e.t.Fatalf("connect: %v", f.Error)
	}
	return c
}

// runChatEvents counts the chat events of runID that c received within d.
func (c *client) chatEventsOf(runID string, d time.Duration) int {
	n := 0
	deadline := time.After(d)
	for {
		select {
		case f := <-c.events:
			if f.Event == wire.EventChat && payload(c.t, f)["runId"] == runID {
				n++
			}
		case <-deadline:
			return n
		}
	}
}

// Clients that declare session-scoped events get the events of the
// sessions they send to or subscribe to, and no others; other clients get
// every session's.
func TestSessionScopedEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	sender := e.connectCaps([]string{wire.CapSessionScopedEvents})
	watcher := e.connectCaps([]string{wire.CapSessionScopedEvents})
	plain := e.operator()

	sender.ok(wire.MethodChatSend, map[string]any{"sessionKey": "agent:main:s1", "message": "one", "idempotencyKey": "r1"}, nil)
	if evs := sender.runEvents("r1"); payload(t, evs[len(evs)-1])["state"] != "final" {
		t.Fatal("the sender did not get its own run's events")
	}
	plain.runEvents("r1")
	if n := watcher.chatEventsOf("r1", 200*time.Millisecond); n != 0 {
		t.Errorf("an unsubscribed scoped client got %d chat events", n)
	}

	var res map[string]any
	watcher.ok(wire.MethodSessionsMessagesSubscribe, map[string]any{"key": "agent:main:s1"}, &res)
	if res["subscribed"] != true || res["key"] != "agent:main:s1" {
		t.Errorf("subscribe = %v", res)
	}
	sender.ok(wire.MethodChatSend, map[string]any{"sessionKey": "agent:main:s1", "message": "two", "idempotencyKey": "r2"}, nil)
	watcher.runEvents("r2")

	watcher.ok(wire.MethodSessionsMessagesUnsubscribe, map[string]any{"key": "agent:main:s1"}, &res)
	if res["subscribed"] != false {
		t.Errorf("unsubscribe = %v", res)
	}
	sender.ok(wire.MethodChatSend, map[string]any{"sessionKey": "agent:main:s1", "message": "three", "idempotencyKey": "r3"}, nil)
	sender.runEvents("r3")
	if n := watcher.chatEventsOf("r3", 200*time.Millisecond); n != 0 {
		t.Errorf("after unsubscribing, %d chat events", n)
	}
}
