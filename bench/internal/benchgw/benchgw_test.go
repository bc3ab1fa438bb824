package benchgw

import (
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard/internal/client"
)

func chat(runID, state string) client.Event {
	p, _ := json.Marshal(map[string]string{"runId": runID, "state": state})
	return client.Event{Event: "chat", Payload: p}
}

// TestFinals: a final reaches its waiter whether it arrives before or
// after Expect; when the connection's events end, every waiter, and every
// later Expect, gets ConnClosed instead of waiting for ever.
func TestFinals(t *testing.T) {
	events := make(chan client.Event)
	f := newFinals(events)
	early := f.Expect("r1")
	events <- chat("r2", "final") // before its Expect
	events <- chat("r1", "error")
	if st := <-early; st != "error" {
		t.Errorf("r1 = %q", st)
	}
	if st := <-f.Expect("r2"); st != "final" {
		t.Errorf("r2 = %q", st)
	}
	pending := f.Expect("r3")
	events <- chat("r4", "aborted")
	close(events)
	if st := <-pending; st != ConnClosed {
		t.Errorf("r3 after the close = %q", st)
	}
	if st := <-f.Expect("r4"); st != "aborted" {
		t.Errorf("r4, ended before the close = %q", st)
	}
	if st := <-f.Expect("r5"); st != ConnClosed {
		t.Errorf("r5, asked after the close = %q", st)
	}
}
