package wire

// Methods of the reference (npm openclaw 2026.9.6) for things Switchboard
// does not have yet: skills, paired devices and nodes, plugin and
// system-agent approvals, ask-user questions, artifacts, talk, progress
// cards, transcript branches, the session companion. Each answers in the
// reference's shape with what Switchboard truthfully has (nothing), so
// the reference's Control UI and CLI show an empty view instead of an
// error. Shapes from the reference's protocol.schema.json and handlers.
const (
	MethodSkillsSearch         = "skills.search"
	MethodSkillsLibraryList    = "skills.library.list"
	MethodSkillsCuratorStatus  = "skills.curator.status"
	MethodSkillsProposalsList  = "skills.proposals.list"
	MethodNodePairList         = "node.pair.list"
	MethodPluginsList          = "plugins.list"
	MethodChannelsPairingList  = "channels.pairing.list"
	MethodDevicePairList       = "device.pair.list"
	MethodPluginApprovalList   = "plugin.approval.list"
	MethodOpenClawApprovalList = "openclaw.approval.list"
	MethodApprovalHistory      = "approval.history"
	MethodExecApprovalGrants   = "exec.approval.grants.list"
	MethodQuestionList         = "question.list"
	MethodArtifactsList        = "artifacts.list"
	MethodTalkCatalog          = "talk.catalog"
	MethodProgressCardGet      = "progressCard.get"
	MethodSessionsBranchesList = "sessions.branches.list"
	MethodSessionsCompanion    = "sessions.companion.state"
	// MethodSessionsObserverVisibility tells the gateway whether the UI
	// shows the session observer; Switchboard has none and acknowledges.
	MethodSessionsObserverVisibility = "sessions.observer.visibility"
	// MethodThemesList lists the Control UI's themes: the ones its build
	// ships, with the default selected (Switchboard keeps no preference).
	MethodThemesList = "themes.list"
	// MethodHooksStatus reports the internal event hooks
	// (hooks.internal.entries).
	MethodHooksStatus = "hooks.status"
	// MethodDiagnosticsStability returns the recorded diagnostic events
	// (Switchboard records none).
	MethodDiagnosticsStability = "diagnostics.stability"
	// MethodConfigSchema returns the JSON Schema of Switchboard's config.
	MethodConfigSchema = "config.schema"
	// MethodConfigSchemaLookup returns one node of the config's JSON
	// Schema and its members.
	MethodConfigSchemaLookup = "config.schema.lookup"
	// MethodWake posts a system event to the main session (or
	// sessionKey's) and runs it now.
	MethodWake = "wake"
)

// addAbsentSchemas: the methods of things Switchboard does not have yet.
func addAbsentSchemas(methodSchemas map[string]*Schema) {
	empty := Object(nil)
	sessionKeyed := Object([]string{"sessionKey"}, P("sessionKey", NonEmptyStr()), P("agentId", NonEmptyStr()))
	methodSchemas[MethodSkillsSearch] = Object(nil, P("query", NonEmptyStr()), P("limit", IntRange(1, 100)))
	methodSchemas[MethodSkillsLibraryList] = Object(nil, P("sessionKey", NonEmptyStr()), P("scope", Enum("mine", "team", "all")))
	methodSchemas[MethodSkillsCuratorStatus] = empty
	methodSchemas[MethodSkillsProposalsList] = OpenObject()
	methodSchemas[MethodNodePairList] = empty
	methodSchemas[MethodPluginsList] = empty
	methodSchemas[MethodChannelsPairingList] = Object(nil, P("channel", NonEmptyStr()), P("accountId", NonEmptyStr()))
	methodSchemas[MethodDevicePairList] = empty
	methodSchemas[MethodPluginApprovalList] = empty
	methodSchemas[MethodOpenClawApprovalList] = empty
	methodSchemas[MethodApprovalHistory] = Object(nil,
		P("cursor", NonEmptyStr()), P("limit", IntRange(1, 100)), P("kind", Enum("exec", "plugin", "system-agent")))
	methodSchemas[MethodExecApprovalGrants] = Object(nil, P("limit", IntRange(1, 500)))
	methodSchemas[MethodQuestionList] = empty
	methodSchemas[MethodArtifactsList] = Object(nil,
		P("sessionKey", NonEmptyStr()), P("runId", NonEmptyStr()), P("taskId", NonEmptyStr()), P("agentId", NonEmptyStr()),
		P("type", Enum("image")), P("limit", IntRange(1, 4)), P("cursor", NonEmptyStr()))
	methodSchemas[MethodTalkCatalog] = empty
	methodSchemas[MethodProgressCardGet] = Object([]string{"sessionKey"}, P("sessionKey", NonEmptyStr()))
	methodSchemas[MethodSessionsBranchesList] = sessionKeyed
	methodSchemas[MethodSessionsCompanion] = sessionKeyed
	methodSchemas[MethodSessionsObserverVisibility] = Object([]string{"visible"}, P("visible", Bool()))
	methodSchemas[MethodThemesList] = empty
	methodSchemas[MethodHooksStatus] = Object(nil, P("agentId", NonEmptyStr()))
	methodSchemas[MethodDiagnosticsStability] = Object(nil,
		P("limit", IntRange(1, MaxDiagnosticsLimit)), P("type", NonEmptyStr()), P("sinceSeq", Int(0)))
	methodSchemas[MethodConfigSchema] = empty
	methodSchemas[MethodConfigSchemaLookup] = Object([]string{"path"}, P("path", &Schema{Type: JSONString, MinLength: 1, MaxLength: 1024}))
	methodSchemas[MethodWake] = Object([]string{"mode", "text"},
		P("mode", Enum("now", "next-heartbeat")), P("text", NonEmptyStr()),
		P("sessionKey", NonEmptyStr()), P("agentId", NonEmptyStr()))
}

// MaxDiagnosticsLimit bounds diagnostics.stability's limit (the
// reference's recorder capacity).
const MaxDiagnosticsLimit = 1000

// SkillsSearchResult is the result of skills.search.
type SkillsSearchResult struct {
	Results []any `json:"results"`
}

// SkillsLibraryListResult is the result of skills.library.list.
// DefaultTarget is "unavailable": there is no library to save into.
type SkillsLibraryListResult struct {
	Entries               []any   `json:"entries"`
	ProfileID             *string `json:"profileId"`
	MultipleProfiles      bool    `json:"multipleProfiles"`
	DefaultTarget         string  `json:"defaultTarget"`
	CanManageWorkspace    bool    `json:"canManageWorkspace"`
	DefaultSelectionLimit int     `json:"defaultSelectionLimit"`
}

// SkillsCuratorStatusResult is the result of skills.curator.status: the
// curator never ran.
type SkillsCuratorStatusResult struct {
	LastAttemptAtMs *int64         `json:"lastAttemptAtMs"`
	LastSuccessAtMs *int64         `json:"lastSuccessAtMs"`
	LastError       *string        `json:"lastError"`
	Counts          map[string]int `json:"counts"` // active, stale, archived
	Skills          []any          `json:"skills"`
	Overlaps        []any          `json:"overlaps"`
}

// PluginsListResult is the result of plugins.list: Switchboard loads no
// plugins and installs none.
type PluginsListResult struct {
	Plugins         []any `json:"plugins"`
	Diagnostics     []any `json:"diagnostics"`
	MutationAllowed bool  `json:"mutationAllowed"`
}

// ChannelsPairingListResult is the result of channels.pairing.list:
// Switchboard keeps no DM pairing requests (dmPolicy "pairing" admits the
// allowlist only).
type ChannelsPairingListResult struct {
	Accounts               []any          `json:"accounts"`
	Requests               []any          `json:"requests"`
	CommandOwnerConfigured bool           `json:"commandOwnerConfigured"`
	Limits                 map[string]int `json:"limits"` // pendingPerAccount, ttlMs
}

// PairListResult is the result of node.pair.list and device.pair.list.
type PairListResult struct {
	Pending []any `json:"pending"`
	Paired  []any `json:"paired"`
}

// ApprovalHistoryResult is the result of approval.history.
type ApprovalHistoryResult struct {
	Items []any `json:"items"`
}

// GrantsListResult is the result of exec.approval.grants.list: standing
// exec approvals (Switchboard grants none).
type GrantsListResult struct {
	Grants []any `json:"grants"`
}

// QuestionListResult is the result of question.list.
type QuestionListResult struct {
	Questions []any `json:"questions"`
}

// ArtifactsListResult is the result of artifacts.list.
type ArtifactsListResult struct {
	Artifacts []any `json:"artifacts"`
}

// TalkCatalogResult is the result of talk.catalog: no talk modes.
type TalkCatalogResult struct {
	Modes         []string      `json:"modes"`
	Transports    []string      `json:"transports"`
	Brains        []string      `json:"brains"`
	Speech        TalkProviders `json:"speech"`
	Transcription TalkProviders `json:"transcription"`
	Realtime      TalkProviders `json:"realtime"`
}

// TalkProviders is one provider list of TalkCatalogResult.
type TalkProviders struct {
	Ready     bool  `json:"ready"`
	Providers []any `json:"providers"`
}

// ProgressCardResult is the result of progressCard.get: card is null.
type ProgressCardResult struct {
	Card any `json:"card"`
}

// BranchesListResult is the result of sessions.branches.list.
type BranchesListResult struct {
	Branches []any `json:"branches"`
}

// CompanionStateResult is the result of sessions.companion.state.
type CompanionStateResult struct {
	Exchanges []any `json:"exchanges"`
}

// OKResult is {ok: true}.
type OKResult struct {
	OK bool `json:"ok"`
}

// ThemesListResult is the result of themes.list.
type ThemesListResult struct {
	Current ThemeSelection `json:"current"`
	Theme   Theme          `json:"theme"`
	Themes  []Theme        `json:"themes"`
}

// ThemeSelection is the selected theme and mode.
type ThemeSelection struct {
	ID        string            `json:"id"`
	Mode      string            `json:"mode"`  // light, dark or system
	Scope     string            `json:"scope"` // "gateway": no per-profile preference
	Overrides map[string]string `json:"overrides"`
}

// Theme is one theme of the catalog.
type Theme struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Source string   `json:"source"` // "builtin"
	Modes  []string `json:"modes"`
}

// HooksStatusResult is the result of hooks.status.
type HooksStatusResult struct {
	WorkspaceDir string       `json:"workspaceDir"`
	Hooks        []HookStatus `json:"hooks"`
}

// HookStatus is one internal hook of HooksStatusResult. Switchboard's
// hooks are shell commands from the config: no requirements, no
// install options.
type HookStatus struct {
	Name                  string           `json:"name"`
	Description           string           `json:"description"`
	Source                string           `json:"source"` // "config"
	HookKey               string           `json:"hookKey"`
	Events                []string         `json:"events"`
	UnknownEvents         []string         `json:"unknownEvents"`
	Always                bool             `json:"always"`
	EnabledByConfig       bool             `json:"enabledByConfig"`
	RequirementsSatisfied bool             `json:"requirementsSatisfied"`
	Loadable              bool             `json:"loadable"`
	BlockedReason         string           `json:"blockedReason,omitempty"`
	ManagedByPlugin       bool             `json:"managedByPlugin"`
	Requirements          HookRequirements `json:"requirements"`
	Missing               HookRequirements `json:"missing"`
	ConfigChecks          []any            `json:"configChecks"`
	Install               []any            `json:"install"`
}

// HookRequirements lists what a hook needs to load (always nothing here).
type HookRequirements struct {
	Bins    []string `json:"bins"`
	AnyBins []string `json:"anyBins"`
	Env     []string `json:"env"`
	Config  []string `json:"config"`
	OS      []string `json:"os"`
}

// DiagnosticsStabilityResult is the result of diagnostics.stability.
type DiagnosticsStabilityResult struct {
	GeneratedAt string             `json:"generatedAt"` // RFC 3339, milliseconds
	Capacity    int                `json:"capacity"`
	Count       int                `json:"count"`
	Dropped     int                `json:"dropped"`
	Events      []any              `json:"events"`
	Summary     DiagnosticsSummary `json:"summary"`
}

// DiagnosticsSummary counts the events by type.
type DiagnosticsSummary struct {
	ByType map[string]int `json:"byType"`
}

// ConfigSchemaResult is the result of config.schema.
type ConfigSchemaResult struct {
	Schema      map[string]any `json:"schema"`
	UIHints     map[string]any `json:"uiHints"`
	Version     string         `json:"version"`
	GeneratedAt string         `json:"generatedAt"`
}

// ConfigSchemaLookupResult is the result of config.schema.lookup.
type ConfigSchemaLookupResult struct {
	Path     string         `json:"path"`
	Schema   map[string]any `json:"schema"`
	Children any            `json:"children"`
}
