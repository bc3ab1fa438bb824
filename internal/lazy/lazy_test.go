package lazy

import (
	"sync"
	"sync/atomic"
	"testing"
)

func answer() int { return 42 }

// declared is declared as the package's users declare theirs.
var declared = Value[int]{New: answer}

func TestDeclaredValue(t *testing.T) {
	if got := declared.Get(); got != 42 {
		t.Fatalf("Get = %d, want 42", got)
	}
}

func TestValueBuildsOnceOnFirstGet(t *testing.T) {
	var built atomic.Int32
	v := &Value[int]{New: func() int { built.Add(1); return 7 }}
	if n := built.Load(); n != 0 {
		t.Fatalf("built %d times before the first Get", n)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := v.Get(); got != 7 {
				t.Errorf("Get = %d, want 7", got)
			}
		}()
	}
	wg.Wait()
	if got := v.Get(); got != 7 {
		t.Fatalf("Get = %d, want 7", got)
	}
	if n := built.Load(); n != 1 {
		t.Fatalf("built %d times, want 1", n)
	}
}
