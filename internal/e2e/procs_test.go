package e2e

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSchedulerFollowsTheLoad: a ready gateway runs on one scheduler
// processor (package procs), concurrent turns move it to the default once
// they queue for that processor, and it returns to one when they stop.
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

	// Sixteen clients send turns (the built-in model answers at once)
	// until the gateway leaves one processor.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		c := g.dial(t)
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				id := fmt.Sprintf("load-%d-%d", i, n)
				var out map[string]any
				if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": fmt.Sprintf("agent:main:load-%d", i), "message": "hello", "idempotencyKey": id}, &out); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if err := c.Call(ctx, "agent.wait", map[string]any{"runId": id, "timeoutMs": 30000}, &out); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
			}
		})
	}
	stop := func() {
		cancel()
		wg.Wait()
	}
	defer stop()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		m := moves()
		if len(m) >= 2 {
			if strings.Contains(m[1], "processors=1 ") {
				t.Fatalf("second move %q stays on one processor", m[1])
			}
			break
		}
		select {
		case err := <-errs:
			t.Fatalf("turn failed: %v", err)
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
