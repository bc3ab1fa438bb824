package shell

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// BenchmarkExecEcho is one exec call of echo: argument checks, process
// start in its own group, output capture and the result text.
func BenchmarkExecEcho(b *testing.B) {
	ctx := tools.WithCaller(context.Background(), tools.Caller{Workspace: b.TempDir()})
	tool := New(Config{})
	args := json.RawMessage(`{"command":"echo hi"}`)
	for b.Loop() {
		if res, err := tool.Call(ctx, args); err != nil || res.Text != "hi\n" {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkShellEcho is the bare cost of the same process, for comparison.
func BenchmarkShellEcho(b *testing.B) {
	for b.Loop() {
		if out, err := exec.Command("/bin/sh", "-c", "echo hi").Output(); err != nil || string(out) != "hi\n" {
			b.Fatal(string(out), err)
		}
	}
}
