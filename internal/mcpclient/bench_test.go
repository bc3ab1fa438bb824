package mcpclient

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/config"
)

// BenchmarkWarmStdioCall measures one tool call through the agent tool
// (name mapping, session lookup, timeout, result projection) to a warm
// stdio server (the test binary serving "ping").
func BenchmarkWarmStdioCall(b *testing.B) {
	m := New(Config{Servers: []config.MCPServerSettings{helperSettings(b, "h")}})
	defer m.Close()
	ts := m.Tools(context.Background())
	tool := find(ts, "h__ping")
	if tool == nil {
		b.Fatal("no h__ping")
	}
	args := json.RawMessage(`{}`)
	b.ResetTimer()
	for b.Loop() {
		if _, err := tool.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWarmStdioCallRawSDK is the same call made directly on an SDK
// client session: the difference to BenchmarkWarmStdioCall is the
// overhead Switchboard adds.
func BenchmarkWarmStdioCallRawSDK(b *testing.B) {
	s := helperSettings(b, "h")
	cmd := exec.Command(s.Command, s.Args...)
	for k, v := range s.Env {
		cmd.Env = append(cmd.Environ(), k+"="+v)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	sess, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := sess.CallTool(context.Background(), &sdk.CallToolParams{Name: "ping", Arguments: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
	}
}
