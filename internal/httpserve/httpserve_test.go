package httpserve

import (
	"net"
	"testing"
	"unsafe"
)

// TestCappedConnRemoteAddr: a capped connection answers its peer's
// address every time (the first call also grows the calling goroutine's
// stack, in the connection's goroutine when net/http makes it).
func TestCappedConnRemoteAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	capped := CapListener(ln, 4)
	dialed := make(chan net.Conn, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	c, err := capped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client := <-dialed
	if client == nil {
		return
	}
	defer client.Close()
	want := client.LocalAddr().String()
	for i := range 2 {
		if got := c.RemoteAddr().String(); got != want {
			t.Errorf("call %d: RemoteAddr %s, want %s", i+1, got, want)
		}
	}
}

// TestCappedConnGrowsTheStackForAConnect: after a connection's first
// RemoteAddr its goroutine's stack holds 24 KiB of frames (a WebSocket
// connect takes it past 16 KiB) without growing again: a growth copies the
// stack elsewhere and walks every frame on it, which the early growth
// spares.
func TestCappedConnGrowsTheStackForAConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	capped := CapListener(ln, 4)
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			var b [1]byte
			c.Read(b[:]) // until the server side closes
		}
	}()
	c, err := capped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	moved := make(chan bool)
	go func() {
		c.RemoteAddr()
		var here byte
		before := uintptr(unsafe.Pointer(&here))
		use24K()
		moved <- uintptr(unsafe.Pointer(&here)) != before
	}()
	if <-moved {
		t.Error("the stack grew again under 24 KiB of frames after RemoteAddr")
	}
}

//go:noinline
func use24K() {
	var b [24 << 10]byte
	keep(&b)
}

//go:noinline
func keep(*[24 << 10]byte) {}
