package daemon

import (
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// compactionConfig maps agents.defaults.compaction onto the runner's
// settings; writable says whether a run may write its workspace (the
// memory flush is skipped otherwise).
func compactionConfig(set *settings.Settings, writable func(agent.RunInfo) bool) agent.CompactionConfig {
	c := set.Compaction
	return agent.CompactionConfig{
		Disabled:          !c.Enabled,
		Mode:              c.Mode,
		Model:             c.Model,
		Timeout:           time.Duration(c.TimeoutSeconds) * time.Second,
		KeepRecentTokens:  c.KeepRecentTokens,
		ReserveTokens:     c.ReserveTokens,
		IdentifierPolicy:  c.IdentifierPolicy,
		QualityGuard:      c.QualityGuard,
		QualityMaxRetries: c.QualityMaxRetries,
		// midTurnPrecheck needs no switch: the budget is checked before
		// every model call, after tool results too.
		RecentTurnsPreserve: c.RecentTurnsPreserve,
		MaxActiveBytes:      c.MaxActiveBytes,
		NotifyUser:          c.NotifyUser,
		MaxConcurrent:       c.MaxConcurrentSummaries,
		MemoryFlush: agent.MemoryFlushConfig{
			Enabled: c.MemoryFlush.Enabled, SoftThresholdTokens: c.MemoryFlush.SoftThresholdTokens,
			Prompt: c.MemoryFlush.Prompt, SystemPrompt: c.MemoryFlush.SystemPrompt, Model: c.MemoryFlush.Model,
			Writable: writable,
		},
		Background: agent.BackgroundConfig{Enabled: c.Background, SoftThresholdTokens: c.BackgroundSoftTokens},
	}
}

// resetRule maps session.reset, resetByType and resetByChannel onto the
// runner's automatic reset; nil when none is configured (no lookup per
// message then).
func resetRule(set *settings.Settings) func(*store.Session) compaction.ResetRule {
	if !set.ResetConfigured {
		return nil
	}
	return func(sess *store.Session) compaction.ResetRule {
		chatType := sess.ChatType
		if strings.Contains(sess.Key, ":thread:") {
			chatType = "thread"
		}
		mode, atHour, idle := set.ResetRule(chatType, sess.Channel)
		return compaction.ResetRule{Mode: mode, AtHour: atHour, IdleMinutes: idle}
	}
}

// pruningConfig maps agents.defaults.contextPruning onto the runner's.
func pruningConfig(set *settings.Settings) agent.PruningConfig {
	p := set.ContextPruning
	return agent.PruningConfig{Enabled: p.Enabled, TTL: p.TTL, Allow: p.Allow, Deny: p.Deny, HardClear: p.HardClear, Placeholder: p.Placeholder}
}
