package stackstart

import (
	"sync"
	"testing"
)

// TestGrowKeepsItsFrameOnTheStack: Grow16 and Grow32 (also the initialiser's)
// grow the stack only while their arrays live in their frames; an array
// moved to the heap (an escaping change) would leave every goroutine to
// grow, and walk its frames, later.
func TestGrowKeepsItsFrameOnTheStack(t *testing.T) {
	for name, f := range map[string]func(){"Grow16": Grow16, "Grow32": Grow32} {
		if n := testing.AllocsPerRun(10, f); n != 0 {
			t.Errorf("%s allocates %v times per call; its array must stay in its frame", name, n)
		}
	}
}

// TestGrowInGoroutines: Grow16 runs at the first line of many goroutines
// at once and leaves each able to go on.
func TestGrowInGoroutines(t *testing.T) {
	done := make(chan int)
	for i := range 8 {
		go func() {
			Grow16()
			done <- deep(64) + i
		}()
	}
	for range 8 {
		<-done
	}
}

// deep recurses n frames.
func deep(n int) int {
	if n == 0 {
		return 0
	}
	var pad [128]byte
	pad[n%128] = byte(n)
	return deep(n-1) + int(pad[n%128])
}

// TestGo: Go runs f once on a new goroutine, through the start func given
// (a WaitGroup's Go, which Wait then waits for) or a go statement.
func TestGo(t *testing.T) {
	var wg sync.WaitGroup
	ran := make(chan int, 2)
	Go(wg.Go, func() { ran <- deep(64) })
	wg.Wait()
	if len(ran) != 1 {
		t.Fatalf("after Wait, f ran %d times, want 1", len(ran))
	}
	Go(nil, func() { ran <- deep(64) })
	<-ran
	<-ran
}
