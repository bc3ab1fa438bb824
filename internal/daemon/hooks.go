package daemon

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/hooks"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
)

// newHooks builds the webhook ingress: each accepted hook starts an agent
// run in its session through the runner.
func newHooks(cfg *config.Config, runner *agent.Runner) (*hooks.Handler, error) {
	agentID := cfg.DefaultAgentID()
	mainKey := cfg.MainKey()
	submit := func(ctx context.Context, key, msg string) (string, error) {
		store := sessionkey.ToStoreKey(agentID, key, mainKey)
		if key == "main" {
			store = sessionkey.MainKey(agentID, mainKey)
		}
		runID := uuid.NewString()
		run, _, err := runner.Submit(ctx, agent.Input{
			RunID: runID, SessionKey: store, AgentID: agentID, Message: msg,
			IdempotencyKey: runID + ":user", Channel: "webhook",
			Provenance: &agent.Provenance{Kind: "hook"},
		})
		if err != nil {
			return "", fmt.Errorf("hook run: %w", err)
		}
		return run.RunID, nil
	}
	return hooks.New(hooks.Config{
		Token: cfg.Hooks.Token, Path: cfg.Hooks.Path, MaxBodyBytes: cfg.Hooks.MaxBodyBytes,
		Submit: submit, NewID: uuid.NewString,
	})
}
