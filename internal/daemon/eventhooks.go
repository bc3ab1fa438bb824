package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/eventhooks"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// newEventHooks builds hooks.internal's dispatcher; nil when none is on.
func newEventHooks(set *settings.Settings, log *slog.Logger) (*eventhooks.Dispatcher, error) {
	hi := set.Hooks.Internal
	if hi.Enabled != nil && !*hi.Enabled || len(hi.Entries) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(hi.Entries))
	for name := range hi.Entries {
		names = append(names, name)
	}
	sort.Strings(names)
	var hs []eventhooks.Handler
	for _, name := range names {
		e := hi.Entries[name]
		if e.Enabled != nil && !*e.Enabled {
			continue
		}
		h := eventhooks.Handler{Name: name, Events: e.Events, Command: e.Command, Env: e.Env}
		if e.TimeoutSeconds != nil {
			h.Timeout = time.Duration(*e.TimeoutSeconds) * time.Second
		}
		if err := eventhooks.Validate(h); err != nil {
			return nil, fmt.Errorf("daemon: hooks.internal.entries: %w", err)
		}
		hs = append(hs, h)
	}
	if len(hs) == 0 {
		return nil, nil
	}
	return eventhooks.New(hs, log), nil
}

// compactHook fires session:compact:before and :after around a session's
// compactions.
func compactHook(d *eventhooks.Dispatcher) func(context.Context, string, *store.Session, *agent.CompactResult) {
	if d == nil {
		return nil
	}
	return func(ctx context.Context, phase string, s *store.Session, res *agent.CompactResult) {
		data := map[string]any{"sessionKey": s.Key, "sessionId": s.SessionID, "agentId": s.AgentID}
		event := eventhooks.CompactBefore
		if phase == agent.CompactAfter {
			event = eventhooks.CompactAfter
			if res != nil {
				data["tokensBefore"], data["tokensAfter"] = res.TokensBefore, res.TokensAfter
			}
		}
		d.Fire(context.WithoutCancel(ctx), event, data)
	}
}
