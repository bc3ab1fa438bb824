package agent

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// BenchmarkWarmTurn measures one warm turn (submit, model turn with an
// instant model, stored, finished, waiter woken) on a session that already
// has 10 or 1,000 turns, with the default history window: the cost per
// turn should not grow with the session's length once the window is full.
// cpu-ms/turn is the process's CPU (all threads, user and system) per
// turn: on a shared machine it moves less than the wall time.
func BenchmarkWarmTurn(b *testing.B) {
	for _, turns := range []int{10, 1000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			reply := textReply("ok, noted.")
			h := newHarness(b, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				return reply, nil
			}, nil)
			ctx := context.Background()
			for i := range turns {
				id := fmt.Sprint("fill", i)
				h.submit(Input{RunID: id, Message: fmt.Sprintf("message %d of the conversation so far", i)})
				h.wait(id)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for i := range b.N {
				id := fmt.Sprint("r", i)
				if _, _, err := h.runner.Submit(ctx, Input{RunID: id, SessionKey: "agent:main:main", AgentID: "main", Message: "hi"}); err != nil {
					b.Fatal(err)
				}
				run, done, err := h.runner.Wait(ctx, id, -1)
				if err != nil || !done || run.Status != store.RunOK {
					b.Fatalf("run %s: %v %v %+v", id, done, err, run)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/turn")
		})
	}
}

// processCPU is the CPU time this process used so far, all threads.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
