package httpserve

import (
	"net"
	"testing"
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
