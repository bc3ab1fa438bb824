package daemon

import (
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
)

// compactionConfig maps agents.defaults.compaction onto the runner's
// settings.
func compactionConfig(cfg *config.Config) agent.CompactionConfig {
	c := cfg.Compaction()
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
	}
}
