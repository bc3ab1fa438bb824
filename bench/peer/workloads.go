package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/bench/internal/benchgw"
	"github.com/switchboardhq/switchboard/internal/client"
)

// driver runs the workloads on one gateway through one operator client.
// Every message is a plain first line (the reference prefixes a user
// message with its time stamp) and directive lines of the instant
// scripted model, which both gateways' models follow (Switchboard's
// built-in one, and internal/fakellm's for the reference).
type driver struct {
	c     *client.Client
	f     *follower
	nonce string
	// timeout bounds each run (the reference takes seconds per turn).
	timeout time.Duration
	seq     int
}

func newDriver(c *client.Client, timeout time.Duration) *driver {
	return &driver{c: c, f: follow(c), nonce: strconv.FormatInt(time.Now().UnixNano()%1e9, 36), timeout: timeout}
}

// id returns a fresh idempotency key.
func (d *driver) id() string {
	d.seq++
	return fmt.Sprintf("peer-%s-%d", d.nonce, d.seq)
}

// send starts a chat turn and returns its run id.
func (d *driver) send(key, message string) (string, error) {
	id := d.id()
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	var res struct {
		RunID string `json:"runId"`
	}
	if err := d.c.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": message, "idempotencyKey": id}, &res); err != nil {
		return "", fmt.Errorf("chat.send on %s: %w", key, err)
	}
	if res.RunID == "" {
		res.RunID = id
	}
	return res.RunID, nil
}

// turn sends message to key and returns the time until the run's final
// chat event.
func (d *driver) turn(key, message string) (time.Duration, error) {
	t, _, err := d.timed(key, message)
	return t, err
}

// timed is turn, also returning the final event.
func (d *driver) timed(key, message string) (time.Duration, ended, error) {
	t0 := time.Now()
	runID, err := d.send(key, message)
	if err != nil {
		return 0, ended{}, err
	}
	var e ended
	if !d.f.until(d.timeout, func() bool { var ok bool; e, ok = d.f.finals[runID]; return ok }) {
		return 0, e, fmt.Errorf("run %s on %s: no final chat event within %v", runID, key, d.timeout)
	}
	if e.state != "final" {
		return 0, e, fmt.Errorf("run %s on %s ended %s: %s", runID, key, e.state, e.text)
	}
	return e.at.Sub(t0), e, nil
}

// key is a session key of the default agent unique to this run.
func (d *driver) key(name string, i int) string {
	return fmt.Sprintf("agent:main:peer-%s-%s-%d", d.nonce, name, i)
}

// warm times n turns on one session after 5 warm-up turns.
func (d *driver) warm(n int) ([]time.Duration, error) {
	key := d.key("warm", 0)
	for range 5 {
		if _, err := d.turn(key, "warm up"); err != nil {
			return nil, err
		}
	}
	return d.repeat(n, func(int) (time.Duration, error) { return d.turn(key, "hello") })
}

// first times n first turns, each on a new session.
func (d *driver) first(n int) ([]time.Duration, error) {
	return d.repeat(n, func(i int) (time.Duration, error) { return d.turn(d.key("first", i), "hello") })
}

// sessionsSend times n turns of a warm session whose agent calls
// sessions_send with timeoutSeconds into another warm session of the same
// agent, whose run replies at once: chat.send until the sender's final
// chat event, which is the sender's two model steps around the tool's
// wait for the target's whole run. The sender's reply, the model's summary
// of the tool result, must say status "ok".
func (d *driver) sessionsSend(n int) ([]time.Duration, error) {
	sender := d.key("sender", 0)
	if _, err := d.turn(sender, "warm up"); err != nil {
		return nil, err
	}
	targets := make([]string, n)
	for i := range targets {
		targets[i] = d.key("target", i)
		if _, err := d.turn(targets[i], "warm up"); err != nil {
			return nil, err
		}
	}
	return d.repeat(n, func(i int) (time.Duration, error) {
		args, _ := json.Marshal(map[string]any{"sessionKey": targets[i], "message": "ping\n/reply pong", "timeoutSeconds": 60})
		t, e, err := d.timed(sender, "send\n/tool sessions_send "+string(args))
		if err != nil {
			return 0, err
		}
		if !strings.Contains(e.text, `"ok"`) || !strings.Contains(e.text, "pong") {
			return 0, fmt.Errorf("sessions_send did not answer status ok with the reply: %.300s", e.text)
		}
		// The target's announce step follows the reply; let it end so
		// that it does not load the next sample (bounded: a gateway
		// whose announce step shows no chat final is not waited for).
		d.f.until(2*time.Second+d.timeout/30, func() bool { return d.finalsOf(targets[i]) >= 3 })
		return t, nil
	})
}

// finalsOf counts the final chat events of session key; call with the
// follower's lock held.
func (d *driver) finalsOf(key string) int {
	n := 0
	for _, e := range d.f.finals {
		if sameKey(e.sessionKey, key) {
			n++
		}
	}
	return n
}

// spawn times n turns of a warm session that each spawn k sub-agents in
// one model step (k sessions_spawn calls): chat.send until the requester
// has taken in every child's result and answered. Each child replies a
// marker; the time is the arrival of the requester's final chat event
// after which its transcript (chat.history) holds every child's echoed
// marker and ends with an assistant message. The history is read only on
// the requester's final events, and the time taken is that of the latest
// final seen before the read.
func (d *driver) spawn(n, k int) ([]time.Duration, error) {
	parent := d.key("spawner", 0)
	if _, err := d.turn(parent, "warm up"); err != nil {
		return nil, err
	}
	return d.repeat(n, func(i int) (time.Duration, error) {
		var msg strings.Builder
		msg.WriteString("spawn")
		results := make([]string, k)
		for j := range results {
			marker := fmt.Sprintf("mk%s%dx%dz", d.nonce, i, j)
			// The child's reply is "done\n<marker>", which the
			// requester's own message (JSON-escaped) does not contain.
			results[j] = "done\n" + marker
			args, _ := json.Marshal(map[string]any{"task": "child\n/reply done\n/reply " + marker})
			msg.WriteString("\n/tool sessions_spawn " + string(args))
		}
		msg.WriteString("\n/then spawned")
		t0 := time.Now()
		if _, err := d.send(parent, msg.String()); err != nil {
			return 0, err
		}
		deadline := t0.Add(2 * d.timeout)
		checked := 0 // the requester's finals since t0 already checked
		for time.Now().Before(deadline) {
			var latest time.Time
			count := 0
			if !d.f.until(time.Until(deadline), func() bool {
				count, latest = 0, time.Time{}
				for _, e := range d.f.finals {
					if e.at.After(t0) && sameKey(e.sessionKey, parent) {
						count++
						if e.at.After(latest) {
							latest = e.at
						}
					}
				}
				return count > checked
			}) {
				break
			}
			checked = count
			done, err := d.holdsAll(parent, results)
			if err != nil {
				return 0, err
			}
			if done {
				return latest.Sub(t0), nil
			}
		}
		return 0, fmt.Errorf("the requester's transcript (chat.history) did not show all %d sub-agent results %q within %v",
			k, results, 2*d.timeout)
	})
}

// holdsAll reports whether session key's recent transcript contains every
// one of texts and ends with an assistant message.
func (d *driver) holdsAll(key string, texts []string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	var h struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := d.c.Call(ctx, "chat.history", map[string]any{"sessionKey": key, "limit": 40}, &h); err != nil {
		return false, fmt.Errorf("chat.history on %s: %w", key, err)
	}
	if len(h.Messages) == 0 || h.Messages[len(h.Messages)-1].Role != "assistant" {
		return false, nil
	}
	var all strings.Builder
	for _, m := range h.Messages {
		all.WriteString(contentText(m.Content))
		all.WriteByte('\n')
	}
	for _, t := range texts {
		if !strings.Contains(all.String(), t) {
			return false, nil
		}
	}
	return true, nil
}

// sameKey reports whether an event's session key names key (a gateway may
// report it lower-cased).
func sameKey(got, key string) bool { return strings.EqualFold(got, key) }

// repeat runs sample n times.
func (d *driver) repeat(n int, sample func(i int) (time.Duration, error)) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n {
		t, err := sample(i)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// p50 formats the median of ds.
func p50(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n/a"
	}
	m, _ := benchgw.Percentiles(ds)
	return benchgw.Round(m).String()
}
