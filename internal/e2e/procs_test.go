package e2e

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
)

// TestSchedulerFollowsTheLoad: a ready gateway runs on one scheduler
// processor (package procs), turns that queue for that processor move it
// to the default, and it returns to one when they stop.
func TestSchedulerFollowsTheLoad(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the gateway's default is one processor, nothing to move")
	}
	g := start(t, "", nil, "SWITCHBOARD_LOG_LEVEL=debug", "GOMAXPROCS=")
	moves := func() []string {
		var out []string
		for _, l := range strings.Split(g.stdio.String(), "\n") {
			if strings.Contains(l, "scheduler processors moved") {
				out = append(out, l)
			}
		}
		return out
	}
	eventually(t, "the ready gateway on one processor", func() bool {
		m := moves()
		return len(m) == 1 && strings.Contains(m[0], "processors=1 ")
	})

	// Bursts of turns on many sessions at once, sent without waiting for
	// their runs: the gateway's requests and runs queue for its one
	// processor however slowly this (race-enabled) test process sends, and
	// it moves to the default.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop := func() {
		cancel()
		wg.Wait()
	}
	defer stop()
	clients := make([]*client.Client, 8)
	for i := range clients {
		clients[i] = g.dial(t)
	}
	errs := make(chan error, 1)
	var sent atomic.Int64
	burst := func() {
		for i, c := range clients {
			for j := range 25 {
				wg.Go(func() {
					n := sent.Add(1)
					var out map[string]any
					err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": fmt.Sprintf("agent:main:load-%d-%d", i, j),
						"message": "hello", "idempotencyKey": fmt.Sprintf("load-%d", n)}, &out)
					if err != nil && ctx.Err() == nil {
						select {
						case errs <- err:
						default:
						}
					}
				})
			}
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		burst()
		wg.Wait()
		m := moves()
		if len(m) >= 2 {
			if strings.Contains(m[1], "processors=1 ") {
				t.Fatalf("second move %q stays on one processor", m[1])
			}
			break
		}
		select {
		case err := <-errs:
			t.Fatalf("chat.send failed: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway stayed on one processor under load; moves:\n%s", strings.Join(m, "\n"))
		}
	}
	stop()
	eventually(t, "one processor again once the load stopped", func() bool {
		m := moves()
		return len(m) >= 3 && strings.Contains(m[len(m)-1], "processors=1 ")
	})
}
