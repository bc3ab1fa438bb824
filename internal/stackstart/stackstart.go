// Package stackstart owns one start-up cost of the gateway's goroutines:
// the walk of their frames when their stacks grow.
//
// Every goroutine starts with a 2 KiB stack. Each time it outgrows it, the
// runtime copies it to one twice as large and walks every frame on it,
// reading each frame's function's entry and PC tables in the executable's
// .gopclntab. Those entries lie in function order across 11 MB, and the
// kernel maps 64 KiB of the file around each page read, so a walk through
// SQLite's parser or a chain of package initialisers makes dozens of
// blocks resident. Measured at ready on the release build (exec to
// /readyz): 3.9 of the 6.6 MiB of .gopclntab resident came from these
// walks (docs/benchmarks.md, eleventh round).
//
// The goroutines that do deep work at start grow their stacks at their
// first line instead, with two or three frames on them: Grow16 there, and
// the main goroutine to 32 KiB in this package's initialiser, which runs
// before any other package's of this module (it imports nothing) and
// before the initialisers whose deep calls grew it.
package stackstart

// growStack16 is the frame Grow16 needs: with it, the stack grows straight
// to 16 KiB.
const growStack16 = 12 << 10

// growStack32 is the frame the initialiser needs for 32 KiB: the main
// goroutine reaches that in the package initialisers anyway.
const growStack32 = 28 << 10

// Grow16 grows the calling goroutine's stack to 16 KiB, the size the
// gateway's loops that query the store reach on their first pass. Call
// it at a goroutine's first line: the copy then walks only the frames
// below it. On a stack that is already that large it zeroes 12 KiB of it
// and returns.
//
//go:noinline
func Grow16() {
	var b [growStack16]byte
	keep16(&b)
}

//go:noinline
func keep16(*[growStack16]byte) {}

// Go runs f on a new goroutine, started by start (a sync.WaitGroup's Go;
// nil: a go statement), whose stack grows to 16 KiB before f runs. The copy
// then walks the same three frames for every goroutine started this way
// (Grow16, Go's closure, WaitGroup.Go's), not f's or its caller's.
func Go(start func(func()), f func()) {
	g := func() {
		Grow16()
		f()
	}
	if start == nil {
		go g()
		return
	}
	start(g)
}

// Grow32 grows the calling goroutine's stack to 32 KiB, the size an HTTP
// connection's goroutine reaches answering a WebSocket client's connect
// (the handler chain, the frame's validation and the hello-ok's JSON
// encoding): grown at its first line instead, the copies on the way walk
// none of those frames. On a stack that is already that large it zeroes
// 28 KiB of it and returns.
//
//go:noinline
func Grow32() { grow32() }

//go:noinline
func grow32() {
	var b [growStack32]byte
	keep32(&b)
}

//go:noinline
func keep32(*[growStack32]byte) {}

func init() { grow32() }
