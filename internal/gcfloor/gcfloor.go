// Package gcfloor lets the Go collector leave a small heap alone until it
// reaches a floor: after each cycle it sets GOGC so that the next cycle
// starts at twice the heap the cycle found live, or at the floor if that
// is more.
//
// The runtime starts a cycle when the heap has grown by GOGC percent
// (100) of what the last cycle found live, or reaches 4 MiB. A busy
// gateway's live heap is small, 2–5 MiB, and it allocates some 24 KB a
// chat turn, so under one client's load it collected several times a
// second, each cycle's fixed work (stopping the world twice, scanning
// every goroutine's stack and the globals, and the idle processor's
// marking) repeated for a few megabytes of garbage. With the floor at
// 10 MiB it collects about a third as often there, for at most that much
// more memory in use; a heap of half the floor or more is collected as
// before (a gateway whose models need a tokenizer's tables holds 6 MiB or
// so live, and gains little). (docs/benchmarks.md, twenty-first round.)
//
// SWITCHBOARD_GC_FLOOR sets another floor (a size such as 16MiB; "0"
// turns the tuner off). A process whose environment sets GOGC or
// GOMEMLIMIT has chosen its own policy: Enabled is false and the binary
// does not start the tuner. GOGC is the whole process's, so only the
// binary's serve starts one; tests of the daemon in-process do not.
package gcfloor

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/docker/go-units"
)

// DefaultFloor is the heap size the binary's serve lets the heap reach
// before a cycle.
const DefaultFloor = 10 << 20

// Env names the variable that overrides DefaultFloor.
const Env = "SWITCHBOARD_GC_FLOOR"

// maxFloor bounds the floor Env may ask for.
const maxFloor = 1 << 30

// Floor returns the floor the environment asks for: DefaultFloor when Env
// is unset or empty, 0 (no tuner) when it is "0".
func Floor(getenv func(string) string) (uint64, error) {
	v := getenv(Env)
	if v == "" {
		return DefaultFloor, nil
	}
	n, err := units.RAMInBytes(v)
	if err != nil || n < 0 || n > maxFloor {
		return 0, fmt.Errorf("%s=%q: want a size from 0 to 1GiB, such as 16MiB", Env, v)
	}
	return uint64(n), nil
}

// minHeap is the runtime's smallest heap goal at GOGC 100 (4 MiB); it
// scales with GOGC, so a GOGC above floor/minHeap*100 would raise the goal
// of a tiny heap past the floor.
const minHeap = 4 << 20

// Enabled reports whether the environment leaves the collector's pace to
// the process: neither GOGC nor GOMEMLIMIT is set.
func Enabled() bool {
	return os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == ""
}

// Percent returns the GOGC that makes the next cycle's goal twice live,
// or floor when that is more: between 100 and the percent whose minimum
// heap is the floor.
func Percent(live, floor uint64) int {
	most := max(int(floor*100/minHeap), 100)
	if live == 0 {
		return most
	}
	if 2*live >= floor {
		return 100
	}
	return min(int(((floor-live)*100+live-1)/live), most) // rounded up: the goal is not below the floor
}

// Tuner sets GOGC after each collection cycle (Percent). Create with
// Start; stop with Stop.
type Tuner struct {
	floor uint64

	mu      sync.Mutex
	stopped bool
	percent int // the GOGC set last
	cycles  int // cycles seen
}

// Start starts a tuner with the floor, in a process whose GOGC is the
// default (Enabled). GOGC stays as it was until the first cycle ends.
func Start(floor uint64) *Tuner {
	t := &Tuner{floor: floor, percent: 100} // GOGC unset (Enabled)
	t.arm()
	return t
}

// sentinel is what each cycle finds unreachable: its cleanup runs once
// that cycle ends. It holds a pointer so that the allocator gives it an
// object of its own (a small pointer-free one may share a block with
// others, which keeps it alive with them).
type sentinel struct{ _ *byte }

// arm allocates the sentinel for the next cycle.
func (t *Tuner) arm() {
	s := new(sentinel)
	runtime.AddCleanup(s, (*Tuner).cycle, t)
}

// cycle runs after each collection cycle, on the runtime's cleanup
// goroutine: it sets GOGC for the next and arms again.
func (t *Tuner) cycle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.cycles++
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// The cycle set its goal at live*(1+GOGC/100), or at the minimum
	// heap (then live is at most what this gives). The goal also counts
	// the stacks and globals once more, so live is over-estimated by
	// their share, and the goal set lands a little under the floor.
	live := ms.NextGC * 100 / uint64(100+t.percent)
	if p := Percent(live, t.floor); p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
	t.arm()
}

// Stop stops the tuner and sets GOGC back to 100, the runtime's default
// (Start runs only where the environment did not set it).
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	debug.SetGCPercent(100)
}

// seen returns how many collection cycles the tuner has seen, and the
// GOGC it set last.
func (t *Tuner) seen() (int, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cycles, t.percent
}
