package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// acked is one message the gateway acknowledged.
type acked struct {
	key, runID, text string
}

// TestAcceptedMessagesSurviveKill9 acknowledges messages to many sessions
// (chat.send, and sessions_send through tools.invoke) while the gateway is
// killed with SIGKILL at random points, over many rounds, and checks that
// every acknowledged text is in its session's history exactly once and
// that agent.wait gives every run a final status.
func TestAcceptedMessagesSurviveKill9(t *testing.T) {
	const (
		rounds   = 20
		perRound = 20 // 400 messages in all, at least 200 acknowledged
		sessions = 20
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	conf := `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },`

	var all []acked
	for round := range rounds {
		g := startWith(t, dir, llm, "", conf)
		c := g.dial(t)
		// The kill comes after a random number of acknowledgements (at
		// least half the round's), a random time later: some messages are
		// queued, some running, some just acknowledged, some unsent.
		killAt := perRound/2 + rng.IntN(perRound/2+1)
		killAfter := time.Duration(rng.IntN(30)) * time.Millisecond
		ackedN := make(chan struct{}, perRound)
		// Half the replies come at once: their run's start waits
		// uncommitted for its end (agent.Config.OpenLinger), and a kill
		// meanwhile must lose only what was not acknowledged.
		sleeps := make([]int, perRound)
		for i := range sleeps {
			if i%2 == 0 {
				sleeps[i] = rng.IntN(40)
			}
		}
		var (
			mu  sync.Mutex
			got []acked
			wg  sync.WaitGroup
		)
		for i := range perRound {
			wg.Go(func() {
				key := fmt.Sprintf("agent:main:s%02d", (round*perRound+i)%sessions)
				id := fmt.Sprintf("r%02d-m%02d", round, i)
				text := fmt.Sprintf("/sleep %dms\nmessage %s", sleeps[i], id)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				a, ok := send(ctx, c, i%3 == 2, key, id, text)
				if ok {
					mu.Lock()
					got = append(got, a)
					mu.Unlock()
				}
				ackedN <- struct{}{}
			})
		}
		for range killAt {
			<-ackedN
		}
		time.Sleep(killAfter)
		g.kill() // SIGKILL, wherever the runs are
		wg.Wait()
		all = append(all, got...)
	}
	if len(all) < 200 {
		t.Fatalf("only %d of %d messages were acknowledged before the kills, want at least 200", len(all), rounds*perRound)
	}
	t.Logf("%d messages acknowledged across %d kills", len(all), rounds)

	g := startWith(t, dir, llm, "", conf)
	c := g.dial(t)
	for _, a := range all {
		w := call(t, c, "agent.wait", map[string]any{"runId": a.runID, "timeoutMs": 30000})
		switch w["status"] {
		case "ok", "error":
		default:
			t.Errorf("agent.wait %s = %v, want a final status", a.runID, w)
		}
	}
	byKey := map[string][]acked{}
	for _, a := range all {
		byKey[a.key] = append(byKey[a.key], a)
	}
	for key, as := range byKey {
		counts := map[string]int{}
		for _, m := range history(t, c, key) {
			if m["role"] != "user" {
				continue
			}
			if txt := texts([]map[string]any{m})[0]; strings.HasPrefix(txt, "user: ") {
				counts[strings.TrimPrefix(txt, "user: ")]++
			}
		}
		for _, a := range as {
			if n := counts[a.text]; n != 1 {
				t.Errorf("%s: acknowledged message %q (run %s) is in the history %d times, want once", key, a.text, a.runID, n)
			}
		}
	}
	if t.Failed() && os.Getenv("CI") == "" {
		t.Logf("gateway log:\n%s", g.stdio.String())
	}
}

// send delivers one message and reports whether the gateway acknowledged
// it: chat.send directly, or sessions_send from another session through
// tools.invoke.
func send(ctx context.Context, c *client.Client, viaTool bool, key, id, text string) (acked, bool) {
	if !viaTool {
		var res map[string]any
		err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": text, "idempotencyKey": id}, &res)
		if err != nil || res["runId"] == nil {
			return acked{}, false
		}
		return acked{key: key, runID: res["runId"].(string), text: text}, true
	}
	var res struct {
		OK      bool            `json:"ok"`
		Details json.RawMessage `json:"details"`
	}
	err := c.Call(ctx, "tools.invoke", map[string]any{
		"tool": "sessions_send", "sessionKey": "agent:main:sender",
		"args": map[string]any{"sessionKey": key, "message": text, "timeoutSeconds": 0},
	}, &res)
	if err != nil {
		return acked{}, false
	}
	var d map[string]any
	if json.Unmarshal(res.Details, &d) != nil || d["status"] != "accepted" || d["runId"] == nil {
		return acked{}, false
	}
	return acked{key: key, runID: d["runId"].(string), text: text}, true
}
