package settings

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/skills"
)

// SkillRoots returns the directories agent id's skills load from, highest
// precedence first: the workspace's skills/ and .agents/skills/, the state
// dir's skills/, then skills.load.extraDirs.
func SkillRoots(c *config.Config, agentID string) []skills.Root {
	ws := c.AgentWorkspace(agentID)
	roots := []skills.Root{
		{Dir: filepath.Join(ws, "skills"), Source: skills.SourceWorkspace},
		{Dir: filepath.Join(ws, ".agents", "skills"), Source: skills.SourceProject},
		{Dir: filepath.Join(c.Paths().StateDir, "skills"), Source: skills.SourceManaged},
	}
	for _, d := range c.SkillsExtraDirs() {
		roots = append(roots, skills.Root{Dir: d, Source: skills.SourceExtra})
	}
	return roots
}

// SkillPolicy returns what gates agent id's skills besides their files:
// skills.entries, the agent's allowlist and the config paths skills may
// require.
func SkillPolicy(c *config.Config, agentID string) skills.Policy {
	p := skills.Policy{Allow: c.AgentSkills(agentID), ConfigTruthy: configTruthy(c)}
	if len(c.Skills.Entries) > 0 {
		p.Entries = make(map[string]skills.Entry, len(c.Skills.Entries))
		for k, e := range c.Skills.Entries {
			p.Entries[k] = skills.Entry{Enabled: e.Enabled, Env: e.Env, APIKey: e.APIKey}
		}
	}
	return p
}

// SkillsPromptChars is skills.limits.maxSkillsPromptChars (default
// skills.MaxPromptChars).
func SkillsPromptChars(c *config.Config) int {
	if p := c.Skills.Limits.MaxSkillsPromptChars; p != nil && *p > 0 {
		return *p
	}
	return skills.MaxPromptChars
}

// configTruthy reports whether a dotted config path holds a truthy value
// (JavaScript's sense: not false, 0, "", null or absent). Keys Switchboard
// does not know are absent.
func configTruthy(c *config.Config) func(string) bool {
	// The tree is built on the first question only: most turns list no
	// skill that requires a config path.
	tree := sync.OnceValue(func() any {
		var t any
		if b, err := json.Marshal(c); err == nil {
			_ = json.Unmarshal(b, &t)
		}
		return t
	})
	return func(path string) bool {
		v := tree()
		for _, k := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			v = m[k]
		}
		switch t := v.(type) {
		case nil:
			return false
		case bool:
			return t
		case float64:
			return t != 0
		case string:
			return t != ""
		}
		return true
	}
}

// SkillScope is everything agent id's skills depend on besides the files.
func SkillScope(c *config.Config, agentID string) skills.Scope {
	return skills.Scope{
		Roots:        SkillRoots(c, agentID),
		AllowTargets: c.SkillsSymlinkTargets(),
		Policy:       SkillPolicy(c, agentID),
		PromptChars:  SkillsPromptChars(c),
	}
}

// SkillScope is agent id's skills.Scope under these settings, made once
// per agent: a run's system prompt asks for it on every turn, and it
// changes only with the configuration (a reload resolves new Settings).
// The skill files, binaries and environment it gates on are still looked
// at on every call of its users.
func (s *Settings) SkillScope(agentID string) skills.Scope {
	if s.scopes == nil { // Settings not made by Resolve
		return SkillScope(s.cfg, agentID)
	}
	c := s.scopes
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.byAgent[agentID]; ok {
		return sc
	}
	if c.byAgent == nil || len(c.byAgent) >= maxSkillScopes {
		c.byAgent = map[string]skills.Scope{}
	}
	sc := SkillScope(s.cfg, agentID)
	c.byAgent[agentID] = sc
	return sc
}

// skillScopes holds Settings.SkillScope's scopes by agent id as asked.
// Users only read a scope (its slices and maps are shared).
type skillScopes struct {
	mu      sync.Mutex
	byAgent map[string]skills.Scope
}

// maxSkillScopes bounds skillScopes.byAgent; past it the cache starts
// over (an unknown agent id gets the defaults' scope, under its own key).
const maxSkillScopes = 256
