package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
)

const mib = 1 << 20

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 10 * mib, 250},        // nothing live yet: the floor's own percent
		{1 * mib, 10 * mib, 250},  // 900 would put the minimum heap at 36 MiB
		{4 * mib, 10 * mib, 150},  // 4 * 2.5 = 10
		{3 * mib, 10 * mib, 234},  // 3 * 3.33…, rounded up to reach the floor
		{5 * mib, 10 * mib, 100},  // twice live is the floor
		{7 * mib, 10 * mib, 100},  // above it: the runtime's default
		{64 * mib, 10 * mib, 100}, //
		{3 * mib, 64 * mib, 1600}, // capped: minimum heap 4 MiB * 16 = 64 MiB
		{1 * mib, 4 * mib, 100},   // a floor of the minimum heap changes nothing
		{1 * mib, 1 * mib, 100},   // nor one below it
	} {
		if got := Percent(tc.live, tc.floor); got != tc.want {
			t.Errorf("Percent(%d MiB, %d MiB) = %d, want %d", tc.live/mib, tc.floor/mib, got, tc.want)
		}
	}
}

func TestFloor(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want uint64
		err  bool
	}{
		{"", DefaultFloor, false},
		{"0", 0, false},
		{"16MiB", 16 * mib, false},
		{"16m", 16 * mib, false},
		{"1GiB", 1 << 30, false},
		{"2GiB", 0, true},
		{"-1", 0, true},
		{"lots", 0, true},
	} {
		got, err := Floor(func(name string) string {
			if name != Env {
				t.Fatalf("read %s", name)
			}
			return tc.v
		})
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Floor(%q) = %d, %v; want %d, error %v", tc.v, got, err, tc.want, tc.err)
		}
	}
}

// gcPercent returns the process's GOGC.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// cyclesSeen collects until the tuner has seen n cycles after those it
// had seen.
func cyclesSeen(t *testing.T, tu *Tuner, n int) {
	t.Helper()
	seen, _ := tu.seen()
	for i := 0; ; i++ {
		if c, _ := tu.seen(); c >= seen+n {
			return
		}
		if i == 10000 {
			t.Fatalf("the tuner saw %d cycles of %d collections", seen, i)
		}
		runtime.GC()
		runtime.Gosched() // the cleanup goroutine runs
	}
}

// TestTunerSetsTheFloor: after a cycle, a small heap's next goal is the
// floor, not twice its size; Stop sets GOGC back, and the cycles after it
// change nothing.
func TestTunerSetsTheFloor(t *testing.T) {
	if gcPercent() != 100 {
		t.Fatalf("GOGC is %d; the test needs the default", gcPercent())
	}
	const floor = 64 * mib
	tu := Start(floor)
	cyclesSeen(t, tu, 2)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if _, p := tu.seen(); p != 1600 || gcPercent() != 1600 {
		t.Errorf("GOGC %d, the tuner's %d; want 1600 for a heap of %d KiB", gcPercent(), p, ms.HeapAlloc>>10)
	}
	if ms.NextGC < floor {
		t.Errorf("the next goal is %d KiB, below the floor", ms.NextGC>>10)
	}
	tu.Stop()
	if gcPercent() != 100 {
		t.Errorf("GOGC %d after Stop", gcPercent())
	}
	c, _ := tu.seen()
	for range 3 {
		runtime.GC()
		runtime.Gosched()
	}
	if c2, _ := tu.seen(); c2 != c || gcPercent() != 100 {
		t.Errorf("after Stop: cycles %d → %d, GOGC %d", c, c2, gcPercent())
	}
	runtime.ReadMemStats(&ms)
	if ms.NextGC >= floor {
		t.Errorf("after Stop the next goal is still %d KiB", ms.NextGC>>10)
	}
}
