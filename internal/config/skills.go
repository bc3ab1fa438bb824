package config

// Skills is the "skills" section.
type Skills struct {
	Load SkillsLoad `json:"load,omitzero"`
	// Entries are per-skill settings by skill key.
	Entries map[string]SkillEntry `json:"entries,omitempty"`
	// Limits bounds the catalog in the system prompt.
	Limits SkillsLimits `json:"limits,omitzero"`
	// AllowBundled lists the bundled skills allowed; Switchboard bundles
	// none, so it changes nothing (accepted for openclaw.json's sake).
	AllowBundled []string `json:"allowBundled,omitempty"`
}

// SkillsLoad is "skills.load".
type SkillsLoad struct {
	// ExtraDirs are more skill roots, at the lowest precedence ("~/"
	// allowed).
	ExtraDirs []string `json:"extraDirs,omitempty"`
	// AllowSymlinkTargets are real directories symlinked skill folders
	// may resolve into.
	AllowSymlinkTargets []string `json:"allowSymlinkTargets,omitempty"`
	// Watch is accepted for openclaw.json's sake: Switchboard rereads
	// changed SKILL.md files on each turn, so there is nothing to turn off.
	Watch *bool `json:"watch,omitempty"`
}

// SkillEntry is "skills.entries.<key>".
type SkillEntry struct {
	// Enabled false turns the skill off.
	Enabled *bool `json:"enabled,omitempty"`
	// APIKey is the value of the skill's primaryEnv.
	APIKey string `json:"apiKey,omitempty"`
	// Env are environment variables the skill may require.
	Env map[string]string `json:"env,omitempty"`
}

// SkillsLimits is "skills.limits".
type SkillsLimits struct {
	// MaxSkillsPromptChars bounds the catalog in the system prompt
	// (default 18,000).
	MaxSkillsPromptChars *int `json:"maxSkillsPromptChars,omitempty"`
}

// AgentSkills returns agent id's skill allowlist: its own list when set,
// else agents.defaults.skills; nil means unrestricted.
func (c *Config) AgentSkills(id string) []string {
	if a := c.agent(normalizeAgentID(id)); a != nil && a.Skills != nil {
		return append([]string{}, a.Skills...)
	}
	if c.Agents.Defaults.Skills != nil {
		return append([]string{}, c.Agents.Defaults.Skills...)
	}
	return nil
}

// SkillsExtraDirs returns skills.load.extraDirs with "~" expanded.
func (c *Config) SkillsExtraDirs() []string {
	return c.expandAll(c.Skills.Load.ExtraDirs)
}

// SkillsSymlinkTargets returns skills.load.allowSymlinkTargets with "~"
// expanded.
func (c *Config) SkillsSymlinkTargets() []string {
	return c.expandAll(c.Skills.Load.AllowSymlinkTargets)
}

func (c *Config) expandAll(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d != "" {
			out = append(out, expandHome(d, c.env))
		}
	}
	return out
}
