package main

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
)

// ended is a run's final chat event as the client saw it.
type ended struct {
	state, sessionKey, text string
	at                      time.Time
}

// follower records, with the time the client read them, the chat events
// that end runs, from one connection. Waiters
// poll nothing: every recorded event wakes them.
type follower struct {
	mu     sync.Mutex
	wake   chan struct{} // closed and replaced on every recorded event
	finals map[string]ended
	order  []string                    // run ids of finals, in arrival order
	text   map[string]*strings.Builder // streamed text per run, for finals without a message
}

func follow(c *client.Client) *follower {
	f := &follower{wake: make(chan struct{}), finals: map[string]ended{},
		text: map[string]*strings.Builder{}}
	go func() {
		for ev := range c.Events() {
			f.record(ev, time.Now())
		}
	}()
	return f
}

type eventPayload struct {
	RunID      string `json:"runId"`
	SessionKey string `json:"sessionKey"`
	State      string `json:"state"`
	DeltaText  string `json:"deltaText"`
	Error      string `json:"errorMessage"`
	Message    *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func (f *follower) record(ev client.Event, at time.Time) {
	if ev.Event != "chat" {
		return
	}
	var p eventPayload
	if json.Unmarshal(ev.Payload, &p) != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case p.State == "delta":
		b := f.text[p.RunID]
		if b == nil {
			b = &strings.Builder{}
			f.text[p.RunID] = b
		}
		b.WriteString(p.DeltaText)
		return
	case (p.State == "final" || p.State == "error" || p.State == "aborted"):
		text := ""
		if p.Message != nil {
			text = contentText(p.Message.Content)
		}
		if b := f.text[p.RunID]; text == "" && b != nil {
			text = b.String()
		}
		if p.State != "final" && p.Error != "" {
			text = p.Error
		}
		delete(f.text, p.RunID)
		f.finals[p.RunID] = ended{state: p.State, sessionKey: p.SessionKey, text: text, at: at}
		f.order = append(f.order, p.RunID)
	default:
		return
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// contentText joins the text parts of a message's content (a string or
// an array of parts).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// until waits until cond, called with the lock held, is true, or the
// timeout passes (false).
func (f *follower) until(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, wake := cond(), f.wake
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-wake:
		case <-deadline.C:
			return false
		}
	}
}
