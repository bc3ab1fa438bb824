// Package lazy holds values built on their first use. A package-level
// Value declared as a composite literal is initialised statically: the
// package that declares it runs no init-time work for it, and a process
// that never uses the value never builds it (package-level sync.OnceValue
// calls, by contrast, run in the package's init at every start).
package lazy

import "sync"

// Value is a T built by New on the first Get. Declare it as
//
//	var pattern = lazy.Value[*regexp.Regexp]{New: buildPattern}
//
// where New is a function, not a closure over other package-level state
// that init would have to set first. A Value must not be copied after its
// first Get.
type Value[T any] struct {
	// New builds the value; Get calls it once.
	New func() T

	once sync.Once
	v    T
}

// Get returns the value, building it on the first call. Concurrent first
// calls wait for one build.
func (l *Value[T]) Get() T {
	l.once.Do(func() { l.v = l.New() })
	return l.v
}
