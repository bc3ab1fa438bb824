package toolbox

import (
	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/files"
	memorytools "github.com/switchboardhq/switchboard/internal/tools/memory"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
)

// Builtin is the gateway's own tool set and what it keeps running.
type Builtin struct {
	// Tools are the tools given first, then exec and process, the file
	// tools, web_fetch and the memory tools.
	Tools []tools.Tool
	// Jobs are exec's background commands, until the process tool clears
	// them or the gateway stops (Close them then).
	Jobs *shell.Jobs
	// Memory serves the memory.* methods; nil when memory search is off.
	Memory *memorytools.Service
}

// NewBuiltin builds the gateway's own tools after first (the session
// tools and spawn): exec and process, the file tools, web_fetch and the
// memory tools over raw, the backend itself (vector search when it keeps
// vectors, with embed's model). skillEnv is what an agent's skills add
// to a host command's environment.
func NewBuiltin(set *settings.Settings, raw store.Store, embed memory.Embedder, skillEnv func(agentID string) map[string]string, first ...tools.Tool) Builtin {
	execCfg := set.Exec
	jobs := shell.NewJobs(shell.JobsConfig{Yield: execCfg.Yield, CleanupTTL: execCfg.Cleanup})
	execTool := shell.New(shell.Config{Timeout: execCfg.Timeout, PathPrepend: execCfg.PathPrepend, MaxOutputBytes: execCfg.MaxOutputBytes, Jobs: jobs, SkillEnv: skillEnv})
	b := Builtin{Jobs: jobs, Tools: append(append(first, execTool, shell.NewProcessTool(jobs)), files.All()...)}
	if fetch := WebFetchTool(set); fetch != nil {
		b.Tools = append(b.Tools, fetch)
	}
	// memory.search.enabled: false removes the memory tools, as in the
	// reference (and the memory.* methods).
	if ms, ok := raw.(store.MemoryStore); ok && (set.MemorySearch.Enabled == nil || *set.MemorySearch.Enabled) {
		idx := memory.NewIndex(ms)
		if vs, ok := raw.(store.MemoryVectorStore); ok {
			idx = memory.NewHybridIndex(ms, vs, embed)
		}
		b.Tools = append(b.Tools, memorytools.All(idx)...)
		b.Memory = &memorytools.Service{Index: idx, Workspace: func(id string) string { return set.Agent(id).Workspace }}
	}
	return b
}
