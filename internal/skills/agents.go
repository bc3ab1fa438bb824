package skills

import (
	"os"

	"github.com/switchboardhq/switchboard/internal/fsstamp"
)

// Scope is what one agent's skills depend on besides the files.
type Scope struct {
	Roots []Root
	// AllowTargets are skills.load.allowSymlinkTargets.
	AllowTargets []string
	Policy       Policy
	// PromptChars bounds the catalog (0: MaxPromptChars).
	PromptChars int
}

// Agents serves every agent's skills from one Loader: the catalog for a
// run's system prompt and the status list for skills.status. Resolve
// gives an agent's scope (from the live configuration).
type Agents struct {
	Resolve func(agentID string) Scope
	loader  Loader
}

// SectionIn is Section with the folders stat'ed through v, the caller's
// pass (a run's system prompt stats the workspace once for its bootstrap
// files and the skill folders under it).
func (a *Agents) SectionIn(v *fsstamp.View, agentID, readTool string) string {
	sc := a.Resolve(agentID)
	list, _ := a.loader.discover(v, sc.Roots, sc.AllowTargets)
	return Section(sc.Policy.Visible(list), readTool, sc.PromptChars)
}

// Status lists agent id's skills with their gates, and the files refused.
func (a *Agents) Status(agentID string) ([]Status, []Problem) {
	sc := a.Resolve(agentID)
	list, problems := a.loader.Discover(sc.Roots, sc.AllowTargets)
	out := make([]Status, 0, len(list))
	for _, s := range list {
		out = append(out, sc.Policy.Status(s))
	}
	return out, problems
}

// Section is the "## Skills" section of agent id's system prompt (empty
// when it may use none); readTool names the tool that reads files.
func (a *Agents) Section(agentID, readTool string) string {
	sc := a.Resolve(agentID)
	list, _ := a.loader.Discover(sc.Roots, sc.AllowTargets)
	return Section(sc.Policy.Visible(list), readTool, sc.PromptChars)
}

// Env is what agent id's skills add to a host command's environment: each
// usable skill's skills.entries env, and its apiKey as its primaryEnv,
// for variables the gateway's environment does not set (the reference's
// injection; sandboxed commands get none).
func (a *Agents) Env(agentID string) map[string]string {
	sc := a.Resolve(agentID)
	list, _ := a.loader.Discover(sc.Roots, sc.AllowTargets)
	lookup := sc.Policy.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var out map[string]string
	set := func(k, v string) {
		if k == "" || v == "" {
			return
		}
		if cur, ok := lookup(k); ok && cur != "" {
			return
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	for _, s := range list {
		st := sc.Policy.Status(s)
		if !st.Eligible || st.BlockedByAgentFilter {
			continue
		}
		e := sc.Policy.Entries[s.Key()]
		for k, v := range e.Env {
			set(k, v)
		}
		if s.Metadata != nil {
			set(s.Metadata.PrimaryEnv, e.APIKey)
		}
	}
	return out
}
