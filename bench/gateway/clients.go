package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/bench/internal/benchgw"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// manyClients connects n clients to a fresh gateway, of which senders run
// warm turns (chat.send → chat final) on their own sessions for d, while
// every client reads the events the gateway broadcasts. It prints turns/s,
// the latency percentiles, and the CPU time per turn of the gateway and of
// this load client (which shares the machine: when its CPU nears the
// gateway's, the client, not the gateway, bounds turns/s).
//
// With scoped, clients declare the session-scoped-events capability and
// receive the events of their own session only; without it every client
// receives every run's events, as plain OpenClaw clients do.
//
// It returns the gateway's CPU per turn in milliseconds.
func manyClients(bin, tmp string, n, senders int, d time.Duration, scoped bool) (float64, error) {
	dir := filepath.Join(tmp, fmt.Sprintf("clients-%d-%d-%d", n, senders, time.Now().UnixNano()))
	g, err := benchgw.Start(bin, dir)
	if err != nil {
		return 0, err
	}
	defer g.Stop()
	tok, err := settings.ReadGatewayToken(dir)
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	clients := make([]*client.Client, n)
	for i := range clients {
		// Each client decodes only the chat events of its own runs; the
		// rest of the broadcast it reads and drops unparsed, so that the
		// load client does not bound what it measures.
		c, err := client.Dial(ctx, client.Options{URL: g.WSURL, Token: tok, SessionScoped: scoped,
			KeepEvent: ownChatEvent(clientPrefix(i))})
		if err != nil {
			return 0, fmt.Errorf("client %d: %w", i, err)
		}
		defer c.Close()
		clients[i] = c
	}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		turns atomic.Int64
		wg    sync.WaitGroup
		fails atomic.Int64
	)
	cpu0, self0 := cpuTime(g.PID()), cpuTime(os.Getpid())
	start := time.Now()
	stop := start.Add(d)
	for i, c := range clients {
		prefix := clientPrefix(i)
		w := newOwnFinals(c, prefix)
		if i >= senders {
			continue // reads (and drops) what is broadcast
		}
		wg.Go(func() {
			key := "agent:main:load-" + strconv.Itoa(i)
			var own []time.Duration
			for seq := 0; time.Now().Before(stop); seq++ {
				id := prefix + strconv.Itoa(seq)
				done := w.expect(id)
				t0 := time.Now()
				if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": "hello", "idempotencyKey": id}, nil); err != nil {
					fails.Add(1)
					return
				}
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					fails.Add(1)
					return
				}
				own = append(own, time.Since(t0))
				turns.Add(1)
			}
			mu.Lock()
			lats = append(lats, own...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, self := cpuTime(g.PID())-cpu0, cpuTime(os.Getpid())-self0
	// The resident set at the end: with -duration long enough it shows
	// whether what the gateway keeps per run or per event is bounded.
	rss := benchgw.RSSMiB(g.PID())
	t := turns.Load()
	p50, p99 := benchgw.Percentiles(lats)
	mode := "all events"
	if scoped {
		mode = "session-scoped"
	}
	perTurn := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(max(t, 1)) }
	fmt.Printf("%4d clients, %3d sending, %s:  %6.0f turns/s, p50 %v, p99 %v, server CPU %.3f ms/turn, load client CPU %.3f ms/turn, server RSS at the end %.1f MiB (%d turns, %d failed)\n",
		n, senders, mode, float64(t)/elapsed.Seconds(), benchgw.Round(p50), benchgw.Round(p99), perTurn(cpu), perTurn(self), rss, t, fails.Load())
	return perTurn(cpu), nil
}

// clientPrefix begins the run ids of client i.
func clientPrefix(i int) string { return "c" + strconv.Itoa(i) + "-" }

// ownChatEvent recognises, by a byte scan, the chat event frames of the
// runs whose ids begin with prefix. It may keep a frame that is not one
// (a message quoting such an id): ownFinals decodes and checks what it
// counts.
func ownChatEvent(prefix string) func([]byte) bool {
	head := []byte(`{"type":"event","event":"chat",`) // as the gateway encodes it
	id := []byte(`"runId":"` + prefix)
	return func(frame []byte) bool {
		return bytes.HasPrefix(frame, head) && bytes.Contains(frame, id)
	}
}

// ownFinals waits for the chat final events of one client's own runs (ids
// with its prefix); everything else it reads and drops.
type ownFinals struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
	ended   map[string]bool
}

func newOwnFinals(c *client.Client, prefix string) *ownFinals {
	f := &ownFinals{waiting: map[string]chan struct{}{}, ended: map[string]bool{}}
	go func() {
		for ev := range c.Events() {
			if ev.Event != "chat" || !strings.Contains(string(ev.Payload), `"runId":"`+prefix) {
				continue
			}
			var p struct {
				RunID string `json:"runId"`
				State string `json:"state"`
			}
			if json.Unmarshal(ev.Payload, &p) != nil || !strings.HasPrefix(p.RunID, prefix) {
				continue
			}
			if p.State == "final" || p.State == "error" || p.State == "aborted" {
				f.mu.Lock()
				if ch, ok := f.waiting[p.RunID]; ok {
					close(ch)
					delete(f.waiting, p.RunID)
				} else {
					f.ended[p.RunID] = true
				}
				f.mu.Unlock()
			}
		}
	}()
	return f
}

func (f *ownFinals) expect(runID string) <-chan struct{} {
	ch := make(chan struct{})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended[runID] {
		delete(f.ended, runID)
		close(ch)
		return ch
	}
	f.waiting[runID] = ch
	return ch
}

// cpuTime is the user+system CPU time of process pid so far (Linux).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
