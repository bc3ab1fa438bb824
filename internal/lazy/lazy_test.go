package lazy

import (
	"sync"
	"testing"
)

var counted struct {
	mu sync.Mutex
	n  int
}

func buildCounted() int {
	counted.mu.Lock()
	defer counted.mu.Unlock()
	counted.n++
	return 42
}

// v is declared as the package's users declare theirs.
var v = Value[int]{New: buildCounted}

func TestValueBuildsOnceOnFirstGet(t *testing.T) {
	counted.mu.Lock()
	if counted.n != 0 {
		t.Fatalf("built %d times before the first Get", counted.n)
	}
	counted.mu.Unlock()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := v.Get(); got != 42 {
				t.Errorf("Get = %d, want 42", got)
			}
		}()
	}
	wg.Wait()
	if got := v.Get(); got != 42 {
		t.Fatalf("Get = %d, want 42", got)
	}
	counted.mu.Lock()
	defer counted.mu.Unlock()
	if counted.n != 1 {
		t.Fatalf("built %d times, want 1", counted.n)
	}
}
