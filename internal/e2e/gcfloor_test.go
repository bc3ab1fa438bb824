package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// gauge returns the value of the unlabelled series name in a /metrics
// text.
func gauge(t *testing.T, text, name string) float64 {
	t.Helper()
	for l := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics:\n%s", name, text)
	return 0
}

// TestServeSetsTheGCFloor: once serving, the gateway lets its heap reach
// a floor before the collector runs (package gcfloor; 10 MiB, here
// SWITCHBOARD_GC_FLOOR's 64 MiB, far above what the runtime would let
// this heap reach), unless GOGC or GOMEMLIMIT in its environment chose a
// policy or the variable is 0; a bad value stops serve. The heap is
// driven through collection cycles by chat.history reads, garbage as
// soon as they are sent, and the next cycle's heap size read from
// /metrics after two of them.
func TestServeSetsTheGCFloor(t *testing.T) {
	const floor = 64 << 20
	for _, tc := range []struct {
		name  string
		env   []string
		tuned bool
	}{
		{"floor", []string{"SWITCHBOARD_GC_FLOOR=64MiB"}, true},
		{"GOGC set", []string{"SWITCHBOARD_GC_FLOOR=64MiB", "GOGC=100"}, false},
		{"GOMEMLIMIT set", []string{"SWITCHBOARD_GC_FLOOR=64MiB", "GOMEMLIMIT=1GiB"}, false},
		{"off", []string{"SWITCHBOARD_GC_FLOOR=0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Neither from the test's own environment: the cases set them.
			g := start(t, "", nil, append([]string{"GOGC=", "GOMEMLIMIT="}, tc.env...)...)
			c := g.dial(t)
			big := strings.Repeat("a longer message ", 2000) // 34 KB
			for i := range 3 {
				key := fmt.Sprint("gc-", i)
				call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": big, "idempotencyKey": key})
				waitRun(t, c, key)
			}
			first := gauge(t, scrape(t, g), "go_gc_cycles_total")
			var next float64
			for i := 0; ; i++ {
				call(t, c, "chat.history", map[string]any{"sessionKey": "agent:main:main", "limit": 50})
				m := scrape(t, g)
				if gauge(t, m, "go_gc_cycles_total") >= first+2 {
					next = gauge(t, m, "go_memstats_next_gc_bytes")
					break
				}
				if i == 5000 {
					t.Fatalf("two collection cycles did not come in %d reads", i)
				}
			}
			// The tuner estimates the live heap from the last goal, which
			// also counts the stacks and globals: the goal it sets lands
			// at the floor or a little under it. Untuned, this heap's is
			// 10–12 MiB.
			if tuned := next >= floor*31/32; tuned != tc.tuned {
				t.Errorf("the next cycle at %.1f MiB of heap; want the floor: %v", next/(1<<20), tc.tuned)
			}
		})
	}
	t.Run("bad", func(t *testing.T) {
		out, err := serveOutput(t, t.TempDir(), "GOGC=", "GOMEMLIMIT=", "SWITCHBOARD_GC_FLOOR=plenty")
		if err == nil || !strings.Contains(out, `SWITCHBOARD_GC_FLOOR="plenty": want a size`) {
			t.Fatalf("serve with a bad floor: %v\n%s", err, out)
		}
	})
}
