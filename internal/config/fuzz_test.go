package config

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	env := testEnv(map[string]string{EnvOpenAIKey: "sk-fuzz", "X": "y"})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, warnings, err := Parse("f.json5", data, env)
		lines := bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) + 1
		for _, w := range warnings {
			if w.File != "f.json5" || w.Line < 0 || w.Line > lines || w.Message == "" {
				t.Fatalf("bad warning %+v (%d lines)", w, lines)
			}
		}
		if err != nil {
			if c != nil {
				t.Fatal("Parse returned both a Config and an error")
			}
			ve, ok := errors.AsType[*ValidationError](err)
			if !ok || len(ve.Problems) == 0 {
				t.Fatalf("error %T %v, want a non-empty *ValidationError", err, err)
			}
			for _, p := range ve.Problems {
				if p.File != "f.json5" || p.Line < 0 || p.Line > lines || p.Message == "" {
					t.Fatalf("bad problem %+v (%d lines)", p, lines)
				}
			}
			return
		}
		if c == nil {
			t.Fatal("Parse returned neither a Config nor an error")
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Validate after a clean Parse: %v", err)
		}
		// Every accessor works on whatever was accepted.
		for _, id := range append(c.AgentIDs(), "", "main", "zzz") {
			_, _ = c.Agent(id)
			_ = c.AgentWorkspace(id) + c.AgentModel(id) + c.SubagentModel(id) + c.SubagentThinking(id) + c.SandboxMode(id)
			_, _ = c.AgentModelFallbacks(id), c.AllowAgents(id)
		}
		_ = fmt.Sprint(c.Scope(), c.MainKey(), c.SendPolicy(), c.MaxPingPongTurns(), c.Visibility(),
			c.SessionToolsVisibility(), c.AgentToAgentEnabled(), c.AgentToAgentAllow(), c.SubagentTools(),
			c.Attachments(), c.MaxSpawnDepth(), c.MaxChildrenPerAgent(), c.MaxConcurrent(),
			c.ArchiveAfterMinutes(), c.RunTimeoutSeconds(), c.AnnounceTimeoutMs(), c.AgentTimeoutSeconds(),
			c.DefaultAgentID(), c.ModelsMode(), c.Providers(), c.gatewayMode(), c.GatewayPort(),
			c.GatewayBind(), c.GatewayListenAddrs(), c.GatewayAuth(), c.RedactSensitive(), c.RedactPatterns(), c.Telegram())
		if c.GatewayPort() < 1 || c.GatewayPort() > 65535 {
			t.Fatalf("GatewayPort %d", c.GatewayPort())
		}
		if n := c.MaxPingPongTurns(); n < 0 || n > 5 {
			t.Fatalf("MaxPingPongTurns %d", n)
		}
		if n := c.MaxSpawnDepth(); n < 1 || n > 5 {
			t.Fatalf("MaxSpawnDepth %d", n)
		}
		if bytes.Contains([]byte(c.String()), []byte("sk-fuzz")) {
			t.Fatal("String leaks the environment's API key")
		}
		r := c.Redacted()
		if err := r.Validate(); err != nil {
			t.Fatalf("Redacted config does not validate: %v", err)
		}
	})
}
