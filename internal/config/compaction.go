package config

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// CompactionConfig is "agents.defaults.compaction" as written (the
// reference's keys); Config.Compaction returns the effective settings.
type CompactionConfig struct {
	Enabled *bool `json:"enabled,omitempty"`
	// Mode is "safeguard" (default for new configs) or "default".
	Mode string `json:"mode,omitempty"`
	// Provider names a registered compaction provider plugin; Switchboard
	// has none, so a set provider only forces safeguard mode.
	Provider string `json:"provider,omitempty"`
	// Model is "<provider>/<model>" used only for summaries.
	Model               string                 `json:"model,omitempty"`
	ThinkingLevel       string                 `json:"thinkingLevel,omitempty"`
	TimeoutSeconds      *int                   `json:"timeoutSeconds,omitempty"`
	KeepRecentTokens    *int                   `json:"keepRecentTokens,omitempty"`
	ReserveTokens       *int                   `json:"reserveTokens,omitempty"`
	RecentTurnsPreserve *int                   `json:"recentTurnsPreserve,omitempty"`
	IdentifierPolicy    string                 `json:"identifierPolicy,omitempty"`
	QualityGuard        CompactionQualityGuard `json:"qualityGuard,omitzero"`
	MidTurnPrecheck     CompactionMidTurn      `json:"midTurnPrecheck,omitzero"`
	NotifyUser          *bool                  `json:"notifyUser,omitempty"`
	MemoryFlush         CompactionMemoryFlush  `json:"memoryFlush,omitzero"`
	PostCompaction      []string               `json:"postCompactionSections,omitempty"`
	// Background is Switchboard's background summaries (not a reference
	// key).
	Background CompactionBackground `json:"background,omitzero"`
	// MaxActiveTranscriptBytes is a byte count or a size string ("20mb").
	MaxActiveTranscriptBytes *ByteSize `json:"maxActiveTranscriptBytes,omitempty"`
}

// CompactionQualityGuard is "agents.defaults.compaction.qualityGuard".
type CompactionQualityGuard struct {
	Enabled    *bool `json:"enabled,omitempty"`
	MaxRetries *int  `json:"maxRetries,omitempty"`
}

// CompactionMidTurn is "agents.defaults.compaction.midTurnPrecheck".
type CompactionMidTurn struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// CompactionMemoryFlush is "agents.defaults.compaction.memoryFlush".
type CompactionMemoryFlush struct {
	Enabled             *bool  `json:"enabled,omitempty"`
	Model               string `json:"model,omitempty"`
	SoftThresholdTokens *int   `json:"softThresholdTokens,omitempty"`
	Prompt              string `json:"prompt,omitempty"`
	SystemPrompt        string `json:"systemPrompt,omitempty"`
}

// CompactionBackground is "agents.defaults.compaction.background":
// summaries written after a turn once the session passes a soft threshold
// below the compaction threshold, applied at the next turn start.
type CompactionBackground struct {
	Enabled *bool `json:"enabled,omitempty"`
	// SoftThresholdTokens is the gap below the compaction threshold.
	SoftThresholdTokens *int `json:"softThresholdTokens,omitempty"`
	// MaxConcurrent bounds summary calls across all sessions.
	MaxConcurrent *int `json:"maxConcurrent,omitempty"`
}

// ByteSize is a byte count written as a number or a size string such as
// "512kb" or "20mb".
type ByteSize int64

func (b *ByteSize) decodeJSON5(d *decoder, p keyPath, v any) bool {
	switch x := v.(type) {
	case float64:
		if x < 0 || x != float64(int64(x)) {
			return d.mismatch(p, "a non-negative whole number of bytes", v)
		}
		*b = ByteSize(x)
		return true
	case string:
		n, ok := parseByteSize(x)
		if !ok {
			return d.mismatch(p, `a size such as "20mb"`, v)
		}
		*b = ByteSize(n)
		return true
	}
	return d.mismatch(p, "a number of bytes or a size string", v)
}

// SwapSize is a ByteSize that may also be -1 (or "-1"): no swap limit.
type SwapSize int64

func (b *SwapSize) decodeJSON5(d *decoder, p keyPath, v any) bool {
	if v == -1.0 || v == "-1" {
		*b = -1
		return true
	}
	var n ByteSize
	if !n.decodeJSON5(d, p, v) {
		return false
	}
	*b = SwapSize(n)
	return true
}

// Ulimit is one sandbox.docker.ulimits entry: a number (soft and hard
// alike) or {soft, hard}.
type Ulimit struct {
	Soft int64 `json:"soft"`
	Hard int64 `json:"hard"`
}

func (u *Ulimit) decodeJSON5(d *decoder, p keyPath, v any) bool {
	whole := func(p keyPath, v any) (int64, bool) {
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) || f < -1 || f > maxSafeInt {
			return 0, d.mismatch(p, "a whole number (-1 for unlimited)", v)
		}
		return int64(f), true
	}
	switch x := v.(type) {
	case float64:
		n, ok := whole(p, x)
		if ok {
			*u = Ulimit{Soft: n, Hard: n}
		}
		return ok
	case map[string]any:
		var out Ulimit
		ok := true
		for _, k := range sortedKeys(x) {
			switch k {
			case "soft":
				out.Soft, ok = whole(p.key(k), x[k])
			case "hard":
				out.Hard, ok = whole(p.key(k), x[k])
			default:
				d.warn(p.key(k), "unknown key (ignored)")
			}
			if !ok {
				return false
			}
		}
		_, hasSoft := x["soft"]
		_, hasHard := x["hard"]
		switch {
		case !hasSoft && !hasHard:
			return d.mismatch(p, "a number or {soft, hard}", v)
		case !hasHard:
			out.Hard = out.Soft
		case !hasSoft:
			out.Soft = out.Hard
		}
		*u = out
		return true
	}
	return d.mismatch(p, "a number or {soft, hard}", v)
}

// parseByteSize reads "123", "10kb", "20mb", "1gb" (case-insensitive,
// optional space, "b" optional after the unit letter).
func parseByteSize(s string) (int64, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"gb", 1 << 30}, {"g", 1 << 30}, {"mb", 1 << 20}, {"m", 1 << 20}, {"kb", 1 << 10}, {"k", 1 << 10}, {"b", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.m
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 || n*float64(mult) > 1<<53 {
		return 0, false
	}
	return int64(n * float64(mult)), true
}

// Compaction is the effective "agents.defaults.compaction".
type Compaction struct {
	Enabled             bool
	Mode                string // "safeguard" or "default"
	Model               string // "" = the session's model
	ThinkingLevel       string
	TimeoutSeconds      int
	KeepRecentTokens    int
	ReserveTokens       int
	RecentTurnsPreserve int
	IdentifierPolicy    string // "strict" or "off"
	QualityGuard        bool
	QualityMaxRetries   int
	MidTurnPrecheck     bool
	NotifyUser          bool
	MaxActiveBytes      int64
	MemoryFlush         MemoryFlush
	// Background summaries (on by default); BackgroundSoftTokens 0 means
	// the runner's default gap.
	Background           bool
	BackgroundSoftTokens int
	// MaxConcurrentSummaries bounds summary calls (default 4).
	MaxConcurrentSummaries int
}

// MemoryFlush is the effective "agents.defaults.compaction.memoryFlush".
type MemoryFlush struct {
	Enabled              bool // default true
	SoftThresholdTokens  int  // default 4000
	Prompt, SystemPrompt string
	Model                string
}

// Compaction returns "agents.defaults.compaction" with the reference's
// defaults: enabled, mode safeguard (forced when a provider is set),
// timeout 180 s, keepRecentTokens 20000, reserve 20000, recentTurnsPreserve
// 3, identifierPolicy strict, quality guard on with 1 retry, memory flush on
// 4000 tokens below the threshold; background summaries on, 4 summary
// calls at a time.
func (c *Config) Compaction() Compaction {
	cc := c.Agents.Defaults.Compaction
	out := Compaction{
		Enabled:             boolOr(cc.Enabled, true),
		Mode:                norm(cc.Mode),
		Model:               strings.TrimSpace(cc.Model),
		ThinkingLevel:       cc.ThinkingLevel,
		TimeoutSeconds:      intOr(cc.TimeoutSeconds, 180),
		KeepRecentTokens:    intOr(cc.KeepRecentTokens, 20000),
		ReserveTokens:       intOr(cc.ReserveTokens, 20000),
		RecentTurnsPreserve: intOr(cc.RecentTurnsPreserve, 3),
		IdentifierPolicy:    norm(cc.IdentifierPolicy),
		QualityGuard:        boolOr(cc.QualityGuard.Enabled, true),
		QualityMaxRetries:   intOr(cc.QualityGuard.MaxRetries, 1),
		MidTurnPrecheck:     boolOr(cc.MidTurnPrecheck.Enabled, false),
		NotifyUser:          boolOr(cc.NotifyUser, false),
		MemoryFlush: MemoryFlush{
			Enabled:             boolOr(cc.MemoryFlush.Enabled, true),
			SoftThresholdTokens: intOr(cc.MemoryFlush.SoftThresholdTokens, 4000),
			Prompt:              cc.MemoryFlush.Prompt,
			SystemPrompt:        cc.MemoryFlush.SystemPrompt,
			Model:               strings.TrimSpace(cc.MemoryFlush.Model),
		},
		Background:             boolOr(cc.Background.Enabled, true),
		BackgroundSoftTokens:   intOr(cc.Background.SoftThresholdTokens, 0),
		MaxConcurrentSummaries: intOr(cc.Background.MaxConcurrent, 4),
	}
	if out.Mode != "default" || cc.Provider != "" {
		out.Mode = "safeguard"
	}
	if out.IdentifierPolicy != "off" {
		out.IdentifierPolicy = "strict"
	}
	if cc.MaxActiveTranscriptBytes != nil {
		out.MaxActiveBytes = int64(*cc.MaxActiveTranscriptBytes)
	}
	return out
}

// OfflineProvider is the provider id of the built-in offline model;
// models.providers.scripted without a baseUrl configures it (its models'
// context windows and maxTokens) rather than a remote provider.
const OfflineProvider = "scripted"

// ModelWindow returns the contextTokens and contextWindow of a configured
// model (0 when unset or the model is not in the catalogue).
func (c *Config) ModelWindow(providerID, modelID string) (contextTokens, contextWindow int) {
	pc, ok := c.Provider(providerID)
	if !ok {
		return 0, 0
	}
	for _, def := range pc.Models {
		if def.ID != modelID {
			continue
		}
		if def.ContextTokens != nil {
			contextTokens = *def.ContextTokens
		}
		if def.ContextWindow != nil {
			contextWindow = *def.ContextWindow
		}
	}
	return contextTokens, contextWindow
}

// compaction checks "agents.defaults.compaction".
func (k *checker) compaction(p keyPath, c *CompactionConfig) {
	k.enum(p.key("mode"), c.Mode, "safeguard", "default")
	k.enum(p.key("identifierPolicy"), c.IdentifierPolicy, "strict", "off", "custom")
	k.intMin(p.key("timeoutSeconds"), c.TimeoutSeconds, 1)
	k.intMin(p.key("keepRecentTokens"), c.KeepRecentTokens, 0)
	k.intMin(p.key("reserveTokens"), c.ReserveTokens, 0)
	k.intMin(p.key("recentTurnsPreserve"), c.RecentTurnsPreserve, 0)
	k.intMin(p.key("qualityGuard").key("maxRetries"), c.QualityGuard.MaxRetries, 0)
	if c.Model != "" {
		k.oneModelRef(p.key("model"), c.Model)
	}
	mf := p.key("memoryFlush")
	k.intMin(mf.key("softThresholdTokens"), c.MemoryFlush.SoftThresholdTokens, 0)
	if c.MemoryFlush.Model != "" {
		k.oneModelRef(mf.key("model"), c.MemoryFlush.Model)
	}
	bg := p.key("background")
	k.intMin(bg.key("softThresholdTokens"), c.Background.SoftThresholdTokens, 1)
	k.intMin(bg.key("maxConcurrent"), c.Background.MaxConcurrent, 1)
}

// SessionReset is "session.reset" (and each resetByType / resetByChannel
// entry).
type SessionReset struct {
	// Mode is "none" (default), "daily" or "idle".
	Mode        string `json:"mode,omitempty"`
	AtHour      *int   `json:"atHour,omitempty"`
	IdleMinutes *int   `json:"idleMinutes,omitempty"`
}

// ResetRule is the effective automatic reset of a session: the entry of
// its channel in session.resetByChannel, else of its type ("direct",
// "group" or "thread") in resetByType, else session.reset, else none. The
// daily hour defaults to 4.
func (c *Config) ResetRule(chatType, channel string) (mode string, atHour, idleMinutes int) {
	r := SessionReset{}
	if c.Session.Reset != nil {
		r = *c.Session.Reset
	}
	if v, ok := c.Session.ResetByType[norm(chatType)]; ok {
		r = v
	}
	if v, ok := c.Session.ResetByChannel[norm(channel)]; ok && channel != "" {
		r = v
	}
	mode = norm(r.Mode)
	if mode == "" {
		mode = "none"
	}
	return mode, intOr(r.AtHour, 4), intOr(r.IdleMinutes, 0)
}

// sessionReset checks one reset entry.
func (k *checker) sessionReset(p keyPath, r SessionReset) {
	k.enum(p.key("mode"), r.Mode, "none", "daily", "idle")
	k.intRange(p.key("atHour"), r.AtHour, 0, 23)
	k.intMin(p.key("idleMinutes"), r.IdleMinutes, 1)
}

// ContextPruningConfig is "agents.defaults.contextPruning".
type ContextPruningConfig struct {
	// Mode is "off" (default) or "cache-ttl".
	Mode string `json:"mode,omitempty"`
	// TTL is a Go duration or a number of minutes as "5m", "1h".
	TTL       string              `json:"ttl,omitempty"`
	Tools     ToolPolicy          `json:"tools,omitzero"`
	HardClear ContextPruningClear `json:"hardClear,omitzero"`
}

// ContextPruningClear is "agents.defaults.contextPruning.hardClear".
type ContextPruningClear struct {
	Enabled     *bool  `json:"enabled,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
}

// ContextPruning is the effective "agents.defaults.contextPruning".
type ContextPruning struct {
	Enabled     bool
	TTL         time.Duration // default 5 minutes
	Allow, Deny []string
	HardClear   bool // default on
	Placeholder string
}

// ContextPruning returns "agents.defaults.contextPruning" with the
// reference's defaults.
func (c *Config) ContextPruning() ContextPruning {
	p := c.Agents.Defaults.ContextPruning
	ttl, err := time.ParseDuration(strings.TrimSpace(p.TTL))
	if err != nil || ttl <= 0 {
		ttl = 5 * time.Minute
	}
	return ContextPruning{
		Enabled: norm(p.Mode) == "cache-ttl", TTL: ttl,
		Allow: slices.Clone(p.Tools.Allow), Deny: slices.Clone(p.Tools.Deny),
		HardClear: boolOr(p.HardClear.Enabled, true), Placeholder: p.HardClear.Placeholder,
	}
}

// contextPruning checks "agents.defaults.contextPruning".
func (k *checker) contextPruning(p keyPath, c *ContextPruningConfig) {
	k.enum(p.key("mode"), c.Mode, "off", "cache-ttl")
	if c.TTL != "" {
		if d, err := time.ParseDuration(strings.TrimSpace(c.TTL)); err != nil || d <= 0 {
			k.fail(p.key("ttl"), "ttl %q must be a positive duration such as \"5m\" or \"1h\"", c.TTL)
		}
	}
}
