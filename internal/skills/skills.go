// Package skills finds an agent's skills — folders holding a SKILL.md
// (YAML frontmatter, then Markdown instructions) — in the reference's
// roots and precedence, decides which are eligible (requirements on
// binaries, environment, config and OS; per-skill enablement; the agent's
// allowlist), and renders the catalog the model reads in its system
// prompt. It reads files and nothing else: the caller passes the roots and
// the policy, so it knows nothing of the gateway's configuration.
package skills

// Source names where a skill was found, with the reference's names (they
// appear in skills.status).
type Source string

// The sources, highest precedence first.
const (
	SourceWorkspace Source = "openclaw-workspace"    // <workspace>/skills
	SourceProject   Source = "agents-skills-project" // <workspace>/.agents/skills
	SourceManaged   Source = "openclaw-managed"      // <state dir>/skills
	SourceExtra     Source = "openclaw-extra"        // skills.load.extraDirs
)

// Limits the loader applies (the reference's defaults).
const (
	// MaxFileBytes bounds one SKILL.md; a bigger file is refused.
	MaxFileBytes = 256_000
	// MaxDepth is how deep below a root a SKILL.md is looked for.
	MaxDepth = 6
	// MaxCandidatesPerRoot bounds the directories examined under one root.
	MaxCandidatesPerRoot = 300
	// MaxSkillsPerSource bounds the skills one root contributes.
	MaxSkillsPerSource = 200
	// MaxSkillsInPrompt bounds the skills listed to the model.
	MaxSkillsInPrompt = 150
	// MaxPromptChars is the catalog's default budget in the system prompt.
	MaxPromptChars = 18_000
	// maxNameLen bounds a skill's name (the AgentSkills spec's limit).
	maxNameLen = 64
	// maxDescriptionLen bounds a description (the AgentSkills spec's limit).
	maxDescriptionLen = 1024
)

// Skill is one parsed SKILL.md.
type Skill struct {
	// Name comes from the frontmatter's name, else the folder's name.
	Name        string
	Description string
	// FilePath is the SKILL.md's absolute path; BaseDir its folder.
	FilePath string
	BaseDir  string
	Source   Source
	// UserInvocable is the frontmatter's user-invocable (default true).
	UserInvocable bool
	// DisableModelInvocation keeps the skill out of the model's catalog.
	DisableModelInvocation bool
	Homepage               string
	// Metadata is metadata.openclaw (or the legacy metadata.clawdbot);
	// nil when the skill declares none.
	Metadata *Metadata
	// Body is the Markdown after the frontmatter.
	Body string
}

// Metadata is a skill's metadata.openclaw block: gates and presentation.
type Metadata struct {
	Always     bool     `json:"always"`
	Emoji      string   `json:"emoji"`
	Homepage   string   `json:"homepage"`
	OS         []string `json:"os"`
	Requires   Requires `json:"requires"`
	PrimaryEnv string   `json:"primaryEnv"`
	// SkillKey names the skill's skills.entries key when it is not Name.
	SkillKey string `json:"skillKey"`
}

// Requires is what a skill needs to be eligible.
type Requires struct {
	// Bins must all be on PATH; one of AnyBins must be.
	Bins    []string `json:"bins"`
	AnyBins []string `json:"anyBins"`
	// Env must each be set in the process or given by the skill's entry.
	Env []string `json:"env"`
	// Config are config paths that must be truthy.
	Config []string `json:"config"`
}

// Key is the skill's skills.entries key.
func (s *Skill) Key() string {
	if s.Metadata != nil && s.Metadata.SkillKey != "" {
		return s.Metadata.SkillKey
	}
	return s.Name
}

// Problem is a SKILL.md that was refused, and why.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}
