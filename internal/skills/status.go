package skills

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
)

// Entry is a skill's skills.entries setting.
type Entry struct {
	// Enabled false turns the skill off; nil leaves it on.
	Enabled *bool
	// Env provides environment variables the skill requires.
	Env map[string]string
	// APIKey provides the skill's primaryEnv.
	APIKey string
}

// Policy is what decides which skills an agent may use, besides the files.
type Policy struct {
	// Entries are skills.entries by skill key.
	Entries map[string]Entry
	// Allow is the agent's skill allowlist; nil leaves the agent
	// unrestricted, empty gives it none.
	Allow []string
	// ConfigTruthy reports whether a config path is set and truthy; nil
	// reports none.
	ConfigTruthy func(path string) bool
	// LookupEnv, LookPath and OS default to the process's.
	LookupEnv func(string) (string, bool)
	LookPath  func(string) (string, error)
	OS        string
}

// Requirements lists requirement names by kind, as skills.status shows
// both what a skill requires and what is missing.
type Requirements struct {
	Bins    []string `json:"bins"`
	AnyBins []string `json:"anyBins"`
	Env     []string `json:"env"`
	Config  []string `json:"config"`
	OS      []string `json:"os"`
}

// ConfigCheck is one required config path and whether it holds.
type ConfigCheck struct {
	Path      string `json:"path"`
	Satisfied bool   `json:"satisfied"`
}

// Status is one skill as skills.status reports it (the reference's
// fields).
type Status struct {
	Name                 string        `json:"name"`
	Description          string        `json:"description"`
	Source               Source        `json:"source"`
	Bundled              bool          `json:"bundled"`
	FilePath             string        `json:"filePath"`
	BaseDir              string        `json:"baseDir"`
	SkillKey             string        `json:"skillKey"`
	PrimaryEnv           string        `json:"primaryEnv,omitempty"`
	Emoji                string        `json:"emoji,omitempty"`
	Homepage             string        `json:"homepage,omitempty"`
	Always               bool          `json:"always"`
	Disabled             bool          `json:"disabled"`
	BlockedByAllowlist   bool          `json:"blockedByAllowlist"`
	BlockedByAgentFilter bool          `json:"blockedByAgentFilter"`
	Eligible             bool          `json:"eligible"`
	PlatformIncompatible bool          `json:"platformIncompatible"`
	ModelVisible         bool          `json:"modelVisible"`
	UserInvocable        bool          `json:"userInvocable"`
	CommandVisible       bool          `json:"commandVisible"`
	Requirements         Requirements  `json:"requirements"`
	Missing              Requirements  `json:"missing"`
	ConfigChecks         []ConfigCheck `json:"configChecks"`
	// Install lists installers; Switchboard installs nothing, so none.
	Install []any `json:"install"`
}

// Status evaluates s under p.
func (p Policy) Status(s *Skill) Status {
	md := s.Metadata
	if md == nil {
		md = &Metadata{}
	}
	entry := p.Entries[s.Key()]
	st := Status{
		Name: s.Name, Description: s.Description, Source: s.Source,
		FilePath: s.FilePath, BaseDir: s.BaseDir, SkillKey: s.Key(),
		PrimaryEnv: md.PrimaryEnv, Emoji: md.Emoji, Homepage: md.Homepage,
		Always: md.Always, UserInvocable: s.UserInvocable,
		Disabled: entry.Enabled != nil && !*entry.Enabled,
		Install:  []any{},
	}
	if st.Homepage == "" {
		st.Homepage = s.Homepage
	}
	req := Requirements{
		Bins: nonNil(md.Requires.Bins), AnyBins: nonNil(md.Requires.AnyBins),
		Env: nonNil(md.Requires.Env), Config: nonNil(md.Requires.Config), OS: nonNil(md.OS),
	}
	st.Requirements = req
	miss := Requirements{Bins: []string{}, AnyBins: []string{}, Env: []string{}, Config: []string{}, OS: []string{}}
	for _, b := range req.Bins {
		if !p.hasBin(b) {
			miss.Bins = append(miss.Bins, b)
		}
	}
	if len(req.AnyBins) > 0 && !slices.ContainsFunc(req.AnyBins, p.hasBin) {
		miss.AnyBins = req.AnyBins
	}
	for _, e := range req.Env {
		if !p.envSatisfied(e, entry, md.PrimaryEnv) {
			miss.Env = append(miss.Env, e)
		}
	}
	st.ConfigChecks = []ConfigCheck{}
	for _, c := range req.Config {
		ok := p.ConfigTruthy != nil && p.ConfigTruthy(c)
		st.ConfigChecks = append(st.ConfigChecks, ConfigCheck{Path: c, Satisfied: ok})
		if !ok {
			miss.Config = append(miss.Config, c)
		}
	}
	if len(req.OS) > 0 && !slices.ContainsFunc(req.OS, func(o string) bool { return normalizeOS(o) == normalizeOS(p.os()) }) {
		miss.OS = req.OS
	}
	if md.Always {
		miss.Bins, miss.AnyBins, miss.Env, miss.Config = []string{}, []string{}, []string{}, []string{}
	}
	st.Missing = miss
	st.PlatformIncompatible = len(miss.OS) > 0
	satisfied := len(miss.OS) == 0 && len(miss.Bins) == 0 && len(miss.AnyBins) == 0 && len(miss.Env) == 0 && len(miss.Config) == 0
	st.Eligible = !st.Disabled && satisfied
	st.BlockedByAgentFilter = p.Allow != nil && !slices.Contains(p.Allow, s.Name)
	available := st.Eligible && !st.BlockedByAgentFilter
	st.ModelVisible = available && !s.DisableModelInvocation
	st.CommandVisible = available && s.UserInvocable
	return st
}

// Visible returns the skills of list the model is shown: eligible,
// allowed for the agent, and not hidden from model invocation.
func (p Policy) Visible(list []*Skill) []*Skill {
	var out []*Skill
	for _, s := range list {
		if p.Status(s).ModelVisible {
			out = append(out, s)
		}
	}
	return out
}

func (p Policy) hasBin(name string) bool {
	look := p.LookPath
	if look == nil {
		look = exec.LookPath
	}
	_, err := look(name)
	return err == nil
}

func (p Policy) envSatisfied(name string, e Entry, primary string) bool {
	lookup := p.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if v, ok := lookup(name); ok && v != "" {
		return true
	}
	if e.Env[name] != "" {
		return true
	}
	return primary == name && e.APIKey != ""
}

func (p Policy) os() string {
	if p.OS != "" {
		return p.OS
	}
	return runtime.GOOS
}

// normalizeOS maps the reference's platform names onto Go's.
func normalizeOS(o string) string {
	switch o = strings.ToLower(strings.TrimSpace(o)); o {
	case "macos", "darwin":
		return "darwin"
	case "win32", "windows":
		return "windows"
	}
	return o
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
