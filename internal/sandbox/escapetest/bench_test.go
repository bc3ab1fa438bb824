package escapetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
)

// benchExec runs exec of echo through tool in workspace ("" a new one)
// and reports p50 and p99.
func benchExec(b *testing.B, tool *shell.Tool, workspace string) {
	if workspace == "" {
		workspace = b.TempDir()
	}
	ctx := tools.WithCaller(context.Background(), tools.Caller{Workspace: workspace})
	args := json.RawMessage(`{"command":"echo hi"}`)
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		if res, err := tool.Call(ctx, args); err != nil || res.Text != "hi\n" {
			b.Fatal(res, err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	if len(ds) > 0 {
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkExecEchoHost is exec of echo on the host.
func BenchmarkExecEchoHost(b *testing.B) { benchExec(b, shell.New(shell.Config{}), "") }

// BenchmarkExecEchoSandboxed is the same inside bubblewrap (rw workspace).
func BenchmarkExecEchoSandboxed(b *testing.B) {
	if _, err := sandbox.Check(context.Background()); err != nil {
		b.Skip(err)
	}
	benchExec(b, shell.New(shell.Config{}).WithSandbox(sandbox.Spec{WorkspaceAccess: sandbox.AccessRW}), "")
}

// BenchmarkExecEchoSandboxedPrivate is the default access, none: the
// command runs in its scope's private workspace.
func BenchmarkExecEchoSandboxedPrivate(b *testing.B) {
	if _, err := sandbox.Check(context.Background()); err != nil {
		b.Skip(err)
	}
	// As in the gateway, the run's workspace is the private one.
	dir := b.TempDir()
	benchExec(b, shell.New(shell.Config{}).WithSandbox(sandbox.Spec{WorkspaceAccess: sandbox.AccessNone, ScopeKey: "main", ScopeDir: dir}), dir)
}

// 50 sandboxed execs at once all succeed.
func TestConcurrentSandboxedExec(t *testing.T) {
	requireBwrap(t)
	tool := shell.New(shell.Config{}).WithSandbox(sandbox.Spec{WorkspaceAccess: sandbox.AccessRW})
	errs := make(chan error, 50)
	for range 50 {
		go func() {
			ctx := tools.WithCaller(context.Background(), tools.Caller{Workspace: t.TempDir()})
			res, err := tool.Call(ctx, json.RawMessage(`{"command":"echo hi > f; cat f"}`))
			if err == nil && res.Text != "hi\n" {
				err = errors.New("result " + res.Text)
			}
			errs <- err
		}()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
