package gateway

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// The reference's methods for what Switchboard does not have (yet):
// skills, paired devices and nodes, plugin and system-agent approvals,
// ask-user questions, artifacts, talk, progress cards, transcript
// branches, the session companion and observer. Each gives the truthful
// answer, nothing, in the reference's shape: the reference's Control UI
// and CLI then show an empty view where "unknown method" made them show
// an error.

// absentMethods registers those methods; each decodes (validates) its
// params and returns a fresh empty result.
func (s *Server) absentMethods() []*method {
	empty := func(name, scope string, result func() any) *method {
		return &method{name: name, scope: scope, handle: func(ctx context.Context, cl *call) (any, error) {
			if err := cl.decode(nil); err != nil {
				return nil, err
			}
			return result(), nil
		}}
	}
	pairList := func() any { return wire.PairListResult{Pending: []any{}, Paired: []any{}} }
	noApprovals := func() any { return []any{} }
	return []*method{
		empty(wire.MethodSkillsSearch, wire.ScopeRead, func() any { return wire.SkillsSearchResult{Results: []any{}} }),
		empty(wire.MethodSkillsLibraryList, wire.ScopeRead, func() any {
			return wire.SkillsLibraryListResult{Entries: []any{}, DefaultTarget: "unavailable", DefaultSelectionLimit: 64}
		}),
		empty(wire.MethodSkillsCuratorStatus, wire.ScopeRead, func() any {
			return wire.SkillsCuratorStatusResult{Counts: map[string]int{"active": 0, "stale": 0, "archived": 0}, Skills: []any{}, Overlaps: []any{}}
		}),
		empty(wire.MethodSkillsProposalsList, wire.ScopeRead, func() any { return map[string]any{"proposals": []any{}} }),
		empty(wire.MethodNodePairList, wire.ScopePairing, pairList),
		empty(wire.MethodPluginsList, wire.ScopeRead, func() any {
			return wire.PluginsListResult{Plugins: []any{}, Diagnostics: []any{}}
		}),
		empty(wire.MethodChannelsPairingList, wire.ScopePairing, func() any {
			return wire.ChannelsPairingListResult{Accounts: []any{}, Requests: []any{}, Limits: map[string]int{"pendingPerAccount": 0, "ttlMs": 0}}
		}),
		empty(wire.MethodDevicePairList, wire.ScopePairing, pairList),
		empty(wire.MethodPluginApprovalList, wire.ScopeApprovals, noApprovals),
		empty(wire.MethodOpenClawApprovalList, wire.ScopeApprovals, noApprovals),
		empty(wire.MethodExecApprovalGrants, wire.ScopeApprovals, func() any { return wire.GrantsListResult{Grants: []any{}} }),
		empty(wire.MethodQuestionList, wire.ScopeQuestions, func() any { return wire.QuestionListResult{Questions: []any{}} }),
		empty(wire.MethodArtifactsList, wire.ScopeRead, func() any { return wire.ArtifactsListResult{Artifacts: []any{}} }),
		empty(wire.MethodTalkCatalog, wire.ScopeRead, func() any {
			none := wire.TalkProviders{Providers: []any{}}
			return wire.TalkCatalogResult{Modes: []string{}, Transports: []string{}, Brains: []string{}, Speech: none, Transcription: none, Realtime: none}
		}),
		empty(wire.MethodProgressCardGet, wire.ScopeRead, func() any { return wire.ProgressCardResult{} }),
		empty(wire.MethodSessionsBranchesList, wire.ScopeRead, func() any { return wire.BranchesListResult{Branches: []any{}} }),
		empty(wire.MethodSessionsCompanion, wire.ScopeRead, func() any { return wire.CompanionStateResult{Exchanges: []any{}} }),
		empty(wire.MethodSessionsObserverVisibility, wire.ScopeRead, func() any { return wire.OKResult{OK: true} }),
		{name: wire.MethodApprovalHistory, scope: wire.ScopeApprovals, handle: s.handleApprovalHistory},
		{name: wire.MethodThemesList, scope: wire.ScopeRead, handle: s.handleThemesList},
		{name: wire.MethodHooksStatus, scope: wire.ScopeRead, handle: s.handleHooksStatus},
		{name: wire.MethodDiagnosticsStability, scope: wire.ScopeRead, handle: s.handleDiagnosticsStability},
		{name: wire.MethodConfigSchema, scope: wire.ScopeRead, handle: s.handleConfigSchema},
		{name: wire.MethodConfigSchemaLookup, scope: wire.ScopeRead, handle: s.handleConfigSchemaLookup},
	}
}

// handleApprovalHistory lists resolved approvals. Switchboard keeps no
// history of exec approvals once they are answered.
func (s *Server) handleApprovalHistory(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	return wire.ApprovalHistoryResult{Items: []any{}}, nil
}

// controlUIThemes are the themes the reference's Control UI build ships
// (dist/control-ui/themes), in its order; "claw" is its default.
var controlUIThemes = []struct{ id, name string }{
	{"claw", "Claw"}, {"knot", "Knot"}, {"dash", "Dash"}, {"absolutely", "Absolutely"},
	{"tide", "Tide"}, {"beacon", "Beacon"}, {"phosphor", "Phosphor"}, {"crt", "CRT"},
	{"manuscript", "Manuscript"}, {"rose", "Rosé"}, {"miami", "Miami"},
}

func (s *Server) handleThemesList(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	res := wire.ThemesListResult{
		Current: wire.ThemeSelection{ID: controlUIThemes[0].id, Mode: "system", Scope: "gateway", Overrides: map[string]string{}},
	}
	for _, t := range controlUIThemes {
		res.Themes = append(res.Themes, wire.Theme{ID: t.id, Name: t.name, Source: "builtin", Modes: []string{"light", "dark"}})
	}
	res.Theme = res.Themes[0]
	return res, nil
}

// handleHooksStatus reports the internal event hooks of the config
// (hooks.internal.entries): shell commands, enabled unless turned off
// one by one or all together.
func (s *Server) handleHooksStatus(ctx context.Context, cl *call) (any, error) {
	var p struct {
		AgentID string `json:"agentId"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	id := s.defaultAgent
	if p.AgentID != "" {
		id = s.agentID(p.AgentID)
		if !s.knownAgent(id) {
			return nil, unknownAgent(id)
		}
	}
	internal := s.conf.Hooks.Internal
	allOn := internal.Enabled == nil || *internal.Enabled
	res := wire.HooksStatusResult{WorkspaceDir: s.conf.Agent(id).Workspace, Hooks: []wire.HookStatus{}}
	none := wire.HookRequirements{Bins: []string{}, AnyBins: []string{}, Env: []string{}, Config: []string{}, OS: []string{}}
	for _, name := range slices.Sorted(maps.Keys(internal.Entries)) {
		h := internal.Entries[name]
		on := allOn && (h.Enabled == nil || *h.Enabled)
		st := wire.HookStatus{
			Name: name, Description: "Runs " + h.Command, Source: "config", HookKey: name,
			Events: append([]string{}, h.Events...), UnknownEvents: []string{},
			EnabledByConfig: on, RequirementsSatisfied: true, Loadable: on && len(h.Events) > 0,
			Requirements: none, Missing: none, ConfigChecks: []any{}, Install: []any{},
		}
		switch {
		case !on:
			st.BlockedReason = "disabled"
		case len(h.Events) == 0:
			st.BlockedReason = "no events defined"
		}
		res.Hooks = append(res.Hooks, st)
	}
	return res, nil
}

// handleDiagnosticsStability returns the diagnostic event recorder's
// snapshot: Switchboard records no such events, so it is empty.
func (s *Server) handleDiagnosticsStability(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	return wire.DiagnosticsStabilityResult{
		GeneratedAt: s.now().UTC().Format(time.RFC3339Nano), Capacity: wire.MaxDiagnosticsLimit,
		Events: []any{}, Summary: wire.DiagnosticsSummary{ByType: map[string]int{}},
	}, nil
}

func (s *Server) handleConfigSchema(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	return wire.ConfigSchemaResult{
		Schema: settings.JSONSchema(), UIHints: map[string]any{},
		Version: s.cfg.Version, GeneratedAt: s.now().UTC().Format(time.RFC3339Nano),
	}, nil
}

func (s *Server) handleConfigSchemaLookup(ctx context.Context, cl *call) (any, error) {
	var p struct {
		Path string `json:"path"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	node, children, path, ok := settings.LookupSchema(settings.JSONSchema(), p.Path)
	if !ok && pluginConfigPath(p.Path) {
		// Switchboard has no plugins: a plugin's config (the reference's
		// Control UI asks for memory-core's once memory tools exist) is an
		// opaque object with nothing configured, as the reference
		// describes an unknown plugin's.
		return wire.ConfigSchemaLookupResult{Path: strings.TrimSpace(p.Path), Schema: map[string]any{"type": "object", "additionalProperties": true}}, nil
	}
	if !ok {
		return nil, invalid("config schema path not found")
	}
	return wire.ConfigSchemaLookupResult{Path: path, Schema: node, Children: children}, nil
}

// pluginConfigPath reports whether path names a plugin's config
// ("plugins.entries.<id>.config" and below).
func pluginConfigPath(path string) bool {
	parts := strings.Split(strings.TrimSpace(path), ".")
	return len(parts) >= 4 && parts[0] == "plugins" && parts[1] == "entries" && parts[2] != "" && parts[3] == "config"
}
