package wire

import "encoding/json"

// Exec approval methods and events (the reference's names).
const (
	MethodExecApprovalList         = "exec.approval.list"
	MethodExecApprovalGet          = "exec.approval.get"
	MethodExecApprovalResolve      = "exec.approval.resolve"
	MethodExecApprovalWaitDecision = "exec.approval.waitDecision"
	// MethodExecApprovalsGet reads the approvals document (allowlists)
	// and the effective defaults: {path, exists, hash, file,
	// resolvedDefaults}. exec.approvals.* needs operator.admin.
	MethodExecApprovalsGet = "exec.approvals.get"
	// MethodExecApprovalsSet replaces the approvals document: {file,
	// baseHash}, baseHash being the hash exec.approvals.get returned
	// (required once the document exists). It answers as
	// exec.approvals.get.
	MethodExecApprovalsSet = "exec.approvals.set"

	// EventExecApprovalRequested carries {id, request, createdAtMs,
	// expiresAtMs} to the operator clients that can answer approvals.
	EventExecApprovalRequested = "exec.approval.requested"
	// EventExecApprovalResolved carries {id, decision, resolvedBy, ts,
	// request}.
	EventExecApprovalResolved = "exec.approval.resolved"
)

// Client capabilities (connect caps) that declare an exec approval client:
// it receives exec.approval.requested and can answer it.
const (
	CapApprovals     = "approvals"
	CapExecApprovals = "exec-approvals"
)

// ApprovalClientIDs are the client ids that answer approvals without
// declaring the capability (the reference's Control UI and apps).
var ApprovalClientIDs = []string{"openclaw-control-ui", "openclaw-macos", "openclaw-ios", "openclaw-android"}

// ExecApprovalResolveParams are the params of exec.approval.resolve.
type ExecApprovalResolveParams struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
}

// ExecApprovalIDParams are the params of exec.approval.get and
// exec.approval.waitDecision.
type ExecApprovalIDParams struct {
	ID string `json:"id"`
	// TimeoutMs bounds waitDecision's wait; on timeout the decision is
	// null. Zero waits until the approval ends.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// addApprovalsSchemas adds the schemas of this file's methods.
func addApprovalsSchemas(methodSchemas map[string]*Schema) {
	methodSchemas[MethodExecApprovalList] = Object(nil)
	methodSchemas[MethodExecApprovalsGet] = Object(nil)
	methodSchemas[MethodExecApprovalsSet] = Object([]string{"file"}, P("file", Any()), P("baseHash", Any()))
	methodSchemas[MethodExecApprovalGet] = Object([]string{"id"}, P("id", NonEmptyStr()))
	methodSchemas[MethodExecApprovalResolve] = Object([]string{"id", "decision"},
		P("id", NonEmptyStr()), P("decision", NonEmptyStr()), P("reviewer", Any()), P("grantExpiresInDays", IntRange(1, 3650)))
	methodSchemas[MethodExecApprovalWaitDecision] = Object([]string{"id"}, P("id", NonEmptyStr()), P("timeoutMs", Int(1)))
}

// ExecApprovalRequest is the request of an exec approval as clients read
// it (the fields Switchboard's CLI and UI use; the gateway sends more).
type ExecApprovalRequest struct {
	Command          string   `json:"command"`
	Cwd              string   `json:"cwd,omitempty"`
	Host             string   `json:"host,omitempty"`
	Security         string   `json:"security,omitempty"`
	Ask              string   `json:"ask,omitempty"`
	AgentID          string   `json:"agentId,omitempty"`
	SessionKey       string   `json:"sessionKey,omitempty"`
	AllowedDecisions []string `json:"allowedDecisions"`
}

// ExecApproval is one pending exec approval.
type ExecApproval struct {
	ID          string              `json:"id"`
	Request     ExecApprovalRequest `json:"request"`
	CreatedAtMs int64               `json:"createdAtMs"`
	ExpiresAtMs int64               `json:"expiresAtMs"`
}

// ExecApprovalsGetResult is exec.approvals.get's result.
type ExecApprovalsGetResult struct {
	Path             string               `json:"path"`
	Exists           bool                 `json:"exists"`
	Hash             string               `json:"hash"`
	File             ExecApprovalsFile    `json:"file"`
	ResolvedDefaults ExecApprovalDefaults `json:"resolvedDefaults"`
}

// ExecApprovalsSetParams are the params of exec.approvals.set.
type ExecApprovalsSetParams struct {
	File     json.RawMessage `json:"file"`
	BaseHash string          `json:"baseHash,omitempty"`
}

// ExecApprovalsFile is the approvals document.
type ExecApprovalsFile struct {
	Version  int                           `json:"version"`
	Defaults *ExecApprovalsPolicy          `json:"defaults,omitempty"`
	Agents   map[string]ExecApprovalsAgent `json:"agents"`
}

// ExecApprovalsPolicy is a policy in the approvals document (the defaults
// or an agent's); empty fields leave the decision to the next level.
type ExecApprovalsPolicy struct {
	Security        string `json:"security,omitempty"`
	Ask             string `json:"ask,omitempty"`
	AskFallback     string `json:"askFallback,omitempty"`
	AutoAllowSkills *bool  `json:"autoAllowSkills,omitempty"`
}

// ExecApprovalsAgent is one agent's part of the approvals document.
type ExecApprovalsAgent struct {
	ExecApprovalsPolicy
	Allowlist []ExecAllowEntry `json:"allowlist"`
}

// ExecAllowEntry is one allowlist entry.
type ExecAllowEntry struct {
	ID               string `json:"id,omitempty"`
	Pattern          string `json:"pattern"`
	Source           string `json:"source,omitempty"`
	LastUsedAt       int64  `json:"lastUsedAt,omitempty"`
	LastUsedCommand  string `json:"lastUsedCommand,omitempty"`
	LastResolvedPath string `json:"lastResolvedPath,omitempty"`
	// ResolvedSHA256 is the content hash an allow-always entry is bound
	// to (with LastResolvedPath).
	ResolvedSHA256 string `json:"resolvedSha256,omitempty"`
}

// ExecApprovalDefaults is the effective exec approval policy.
type ExecApprovalDefaults struct {
	Security        string `json:"security"`
	Ask             string `json:"ask"`
	AskFallback     string `json:"askFallback"`
	AutoAllowSkills bool   `json:"autoAllowSkills"`
}

// ExecApprovalListResult is exec.approval.list's result: an array.
type ExecApprovalListResult []ExecApproval
