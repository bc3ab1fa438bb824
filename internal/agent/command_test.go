package agent

import (
	"context"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestEndCommand: a command's run id ends ok for whoever waits on it, in
// a session that exists or not, and a run id already known is left as it
// is.
func TestEndCommand(t *testing.T) {
	h := newHarness(t, echo, nil)
	ctx := context.Background()
	waited := make(chan *store.Run, 1)
	go func() {
		run, done, err := h.runner.Wait(ctx, "cmd-1", -1)
		if err != nil || !done {
			t.Errorf("Wait = %v, %v", done, err)
		}
		waited <- run
	}()
	if err := h.runner.EndCommand(ctx, "cmd-1", "agent:main:nowhere", "main"); err != nil {
		t.Fatal(err)
	}
	if run := <-waited; run.Status != store.RunOK || run.StopReason != StopCommand || run.EndedAt.IsZero() || run.SessionKey != "agent:main:nowhere" {
		t.Errorf("command run = %+v", run)
	}

	turn := h.submit(Input{RunID: "turn-1", Message: "hello"})
	h.wait(turn.RunID)
	if err := h.runner.EndCommand(ctx, "cmd-2", "agent:main:main", "main"); err != nil {
		t.Fatal(err)
	}
	if run := h.wait("cmd-2"); run.SessionID == "" || run.AgentID != "main" {
		t.Errorf("command run in a session = %+v", run)
	}
	// A run id already known (a repeated send) is not overwritten.
	if err := h.runner.EndCommand(ctx, "turn-1", "agent:main:main", "main"); err != nil {
		t.Fatal(err)
	}
	if run := h.wait("turn-1"); run.StopReason == StopCommand {
		t.Errorf("EndCommand replaced run turn-1: %+v", run)
	}
	if err := h.runner.EndCommand(ctx, "", "agent:main:main", "main"); err != nil {
		t.Errorf("EndCommand without a run id: %v", err)
	}
}
