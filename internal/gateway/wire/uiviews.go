package wire

// Read-only methods behind the reference Control UI's chat header, Systems
// page and task drawer (npm openclaw 2026.9.6; shapes from its
// protocol.schema.json and recorded responses).
const (
	// MethodChatMetadata returns the chat view's model picker rows and
	// slash commands.
	MethodChatMetadata = "chat.metadata"
	// MethodSystemInfo describes the gateway's host and process.
	MethodSystemInfo = "system.info"
	// MethodEnvironmentsList lists where sessions can run: for
	// Switchboard, the gateway itself.
	MethodEnvironmentsList = "environments.list"
	// MethodNodeList lists paired nodes (Switchboard pairs none).
	MethodNodeList = "node.list"
	// MethodSkillsStatus lists an agent's skills.
	MethodSkillsStatus = "skills.status"
	// MethodUpdateStatus reports a pending self-update (Switchboard does
	// not update itself: never one).
	MethodUpdateStatus = "update.status"
	// MethodTasksList lists detached background work: sub-agent runs.
	MethodTasksList = "tasks.list"
)

// TaskStatuses are the statuses of tasks.list rows.
var TaskStatuses = []string{"queued", "running", "completed", "failed", "cancelled", "timed_out"}

// MaxTasksLimit bounds tasks.list's limit.
const MaxTasksLimit = 500

// addUiviewsSchemas adds the schemas of this file's methods.
func addUiviewsSchemas(methodSchemas map[string]*Schema) {
	agentOrSession := Object(nil, P("agentId", NonEmptyStr()), P("sessionKey", NonEmptyStr()))
	methodSchemas[MethodChatMetadata] = agentOrSession
	methodSchemas[MethodSkillsStatus] = agentOrSession
	methodSchemas[MethodMemoryStatus] = Object(nil, P("agentId", NonEmptyStr()))
	methodSchemas[MethodDoctorMemoryStatus] = Object(nil, P("agentId", NonEmptyStr()), P("probe", Bool()))
	methodSchemas[MethodMemoryIndex] = Object(nil, P("agentId", NonEmptyStr()))
	methodSchemas[MethodMemorySearch] = Object([]string{"query"}, P("agentId", NonEmptyStr()),
		P("query", NonEmptyStr()), P("maxResults", IntRange(1, 100)),
		P("minScore", &Schema{Type: JSONNumber, HasMin: true, Min: 0, HasMax: true, Max: 1}))
	methodSchemas[MethodSystemInfo] = Object(nil)
	methodSchemas[MethodNodeList] = Object(nil)
	// The UI sends view options (includeDesktopSetup, projection) the
	// published schema does not list.
	methodSchemas[MethodEnvironmentsList] = OpenObject()
	methodSchemas[MethodUpdateStatus] = Object(nil, P("refreshCheckout", Bool()))
	// status is one of TaskStatuses or an array of them; the handler
	// checks which (the schema language has no union).
	methodSchemas[MethodTasksList] = Object(nil,
		P("status", Any()),
		P("agentId", NonEmptyStr()), P("sessionKey", NonEmptyStr()),
		P("limit", IntRange(1, MaxTasksLimit)), P("cursor", Str()),
		P("sortBy", Str()))
}

// ChatMetadataResult is the result of chat.metadata.
type ChatMetadataResult struct {
	Models   []map[string]any `json:"models"`
	Commands []ChatCommand    `json:"commands"`
	// RuntimeSelectionLocked is false: the runtime is always Switchboard's.
	RuntimeSelectionLocked bool `json:"runtimeSelectionLocked"`
}

// ChatCommand is one slash command of ChatMetadataResult.
type ChatCommand struct {
	Name        string   `json:"name"`
	NativeName  string   `json:"nativeName"`
	TextAliases []string `json:"textAliases"`
	Description string   `json:"description"`
	Category    string   `json:"category"`
	Source      string   `json:"source"` // "native"
	Scope       string   `json:"scope"`  // "both": text and native
	AcceptsArgs bool     `json:"acceptsArgs"`
}

// SystemInfoResult is the result of system.info. NodeVersion, required
// by the reference's schema, carries the Go runtime's version.
type SystemInfoResult struct {
	MachineName       string    `json:"machineName"`
	Hostname          string    `json:"hostname"`
	Platform          string    `json:"platform"` // Node's names: linux, darwin, win32
	Release           string    `json:"release"`
	Arch              string    `json:"arch"` // Node's names: x64, arm64, ia32
	OSLabel           string    `json:"osLabel"`
	Port              int       `json:"port,omitempty"`
	NodeVersion       string    `json:"nodeVersion"`
	PID               int       `json:"pid"`
	ProcessInstanceID string    `json:"processInstanceId,omitempty"`
	UptimeMs          int64     `json:"uptimeMs"`
	CPUCount          int       `json:"cpuCount"`
	LoadAverage       []float64 `json:"loadAverage,omitempty"` // 1, 5, 15 minutes
	MemoryTotalBytes  int64     `json:"memoryTotalBytes"`
	MemoryFreeBytes   int64     `json:"memoryFreeBytes"`
	// The file system of the state directory.
	DiskTotalBytes     int64      `json:"diskTotalBytes,omitempty"`
	DiskAvailableBytes int64      `json:"diskAvailableBytes,omitempty"`
	DiskPath           string     `json:"diskPath,omitempty"`
	UtilityModel       StatusOnly `json:"defaultAgentUtilityModel"`
}

// StatusOnly is {status}.
type StatusOnly struct {
	Status string `json:"status"`
}

// EnvironmentsListResult is the result of environments.list.
type EnvironmentsListResult struct {
	Environments []Environment `json:"environments"`
}

// Environment is one place sessions run.
type Environment struct {
	ID           string   `json:"id"`
	Type         string   `json:"type"`
	Label        string   `json:"label,omitempty"`
	Status       string   `json:"status"` // available, unavailable, starting, stopping, error
	Platform     string   `json:"platform,omitempty"`
	SessionHost  bool     `json:"sessionHost"`
	Trust        string   `json:"trust,omitempty"` // persistent or disposable
	Capabilities []string `json:"capabilities,omitempty"`
}

// NodeListResult is the result of node.list.
type NodeListResult struct {
	TS    int64 `json:"ts"`
	Nodes []any `json:"nodes"`
}

// SkillsStatusResult is the result of skills.status.
type SkillsStatusResult struct {
	WorkspaceDir     string `json:"workspaceDir"`
	ManagedSkillsDir string `json:"managedSkillsDir"`
	AgentID          string `json:"agentId"`
	Skills           []any  `json:"skills"`
}

// UpdateStatusResult is the result of update.status: both null when no
// update is staged or known.
type UpdateStatusResult struct {
	Sentinel        any `json:"sentinel"`
	UpdateAvailable any `json:"updateAvailable"`
}

// TasksListResult is the result of tasks.list.
type TasksListResult struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// Task is one row of tasks.list.
type Task struct {
	ID              string `json:"id"`
	Kind            string `json:"kind,omitempty"`
	Runtime         string `json:"runtime,omitempty"`
	Status          string `json:"status"`
	Title           string `json:"title,omitempty"`
	AgentID         string `json:"agentId,omitempty"`
	SessionKey      string `json:"sessionKey,omitempty"`
	ChildSessionKey string `json:"childSessionKey,omitempty"`
	OwnerKey        string `json:"ownerKey,omitempty"`
	RunID           string `json:"runId,omitempty"`
	CreatedAt       int64  `json:"createdAt,omitempty"`
	StartedAt       int64  `json:"startedAt,omitempty"`
	EndedAt         int64  `json:"endedAt,omitempty"`
	Error           string `json:"error,omitempty"`
	DeliveryStatus  string `json:"deliveryStatus,omitempty"`
	Prompt          string `json:"prompt,omitempty"`
}

// Switchboard's memory methods (the reference's `memory` CLI reads its
// index in-process; these serve `switchboard memory`).
const (
	MethodMemoryStatus = "memory.status"
	MethodMemoryIndex  = "memory.index"
	MethodMemorySearch = "memory.search"
	// MethodDoctorMemoryStatus is the reference Control UI's memory view.
	MethodDoctorMemoryStatus = "doctor.memory.status"
)

// DoctorMemoryStatusResult is doctor.memory.status's result (the
// reference's fields Switchboard has; no dreaming).
type DoctorMemoryStatusResult struct {
	AgentID                 string          `json:"agentId"`
	Provider                string          `json:"provider"`
	Embedding               MemoryEmbedding `json:"embedding"`
	SearchRuntimeRegistered bool            `json:"searchRuntimeRegistered"`
}

// MemoryEmbedding says whether memory search's embeddings are available;
// Checked false means not probed.
type MemoryEmbedding struct {
	OK      bool   `json:"ok"`
	Checked *bool  `json:"checked,omitempty"`
	Error   string `json:"error,omitempty"`
}
