package wire

import "encoding/json"

// Protocol versions the Switchboard gateway speaks. Frames are identical in
// both; 2026.9.x clients send 4..4, 2026.3.x clients 3..3.
const (
	MinProtocol = 3
	MaxProtocol = 4
)

// Roles a client may connect as.
const (
	RoleOperator = "operator"
	RoleNode     = "node"
	RoleWorker   = "worker"
)

// Operator scopes (a closed set).
const (
	ScopeRead        = "operator.read"
	ScopeWrite       = "operator.write"
	ScopeAdmin       = "operator.admin"
	ScopeApprovals   = "operator.approvals"
	ScopeQuestions   = "operator.questions"
	ScopePairing     = "operator.pairing"
	ScopeTalk        = "operator.talk"
	ScopeTalkSecrets = "operator.talk.secrets"
)

// ClientIDs are the admitted connect client.id values (2026.9.6).
var ClientIDs = []string{
	"webchat-ui", "openclaw-control-ui", "openclaw-browser-copilot", "openclaw-tui",
	"webchat", "cli", "gateway-client", "openclaw-macos", "openclaw-linux",
	"openclaw-ios", "openclaw-watchos", "openclaw-android", "node-host",
	"openclaw-worker", "test", "fingerprint", "openclaw-probe",
}

// ClientModes are the admitted connect client.mode values (2026.9.6).
var ClientModes = []string{"webchat", "cli", "ui", "backend", "node", "worker", "probe", "test"}

// ConnectParams are the params of the connect request.
type ConnectParams struct {
	MinProtocol int        `json:"minProtocol"`
	MaxProtocol int        `json:"maxProtocol"`
	Client      ClientInfo `json:"client"`
	// Role is "operator" when empty.
	Role   string   `json:"role,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	Caps   []string `json:"caps,omitempty"`
	// Commands and Permissions are node claims.
	Commands    []string        `json:"commands,omitempty"`
	Permissions json.RawMessage `json:"permissions,omitempty"`
	PathEnv     string          `json:"pathEnv,omitempty"`
	Auth        *ConnectAuth    `json:"auth,omitempty"`
	Device      *DeviceIdentity `json:"device,omitempty"`
	Locale      string          `json:"locale,omitempty"`
	UserAgent   string          `json:"userAgent,omitempty"`
	// ModelCatalog asks the Control UI's models.snapshot (see
	// CapModelCatalogSnapshot): {sessionKey} or {agentId}.
	ModelCatalog json.RawMessage `json:"modelCatalog,omitempty"`
}

// ClientInfo identifies the connecting client.
type ClientInfo struct {
	ID              string `json:"id"`
	DisplayName     string `json:"displayName,omitempty"`
	Version         string `json:"version"`
	Platform        string `json:"platform"`
	DeviceFamily    string `json:"deviceFamily,omitempty"`
	ModelIdentifier string `json:"modelIdentifier,omitempty"`
	Mode            string `json:"mode"`
	InstanceID      string `json:"instanceId,omitempty"`
}

// ConnectAuth carries the client's credentials. Either Token or Password
// may hold the gateway's shared secret.
type ConnectAuth struct {
	Token                     string `json:"token,omitempty"`
	Password                  string `json:"password,omitempty"`
	DeviceToken               string `json:"deviceToken,omitempty"`
	BootstrapToken            string `json:"bootstrapToken,omitempty"`
	ApprovalRuntimeToken      string `json:"approvalRuntimeToken,omitempty"`
	AgentRuntimeIdentityToken string `json:"agentRuntimeIdentityToken,omitempty"`
}

// DeviceIdentity is the signed device block of a connect request.
type DeviceIdentity struct {
	ID        string `json:"id"`
	PublicKey string `json:"publicKey"`
	Signature string `json:"signature"`
	SignedAt  int64  `json:"signedAt"`
	Nonce     string `json:"nonce,omitempty"`
}

// connectSchema builds the schema of connect params.
func connectSchema() *Schema {
	return Object([]string{"minProtocol", "maxProtocol", "client"},
		P("minProtocol", Int(1)),
		P("maxProtocol", Int(1)),
		P("client", Object([]string{"id", "version", "platform", "mode"},
			P("id", Enum(ClientIDs...)),
			P("displayName", Str()),
			P("version", NonEmptyStr()),
			P("buildId", Str()),
			P("timeZone", Str()),
			P("platform", NonEmptyStr()),
			P("deviceFamily", Str()),
			P("modelIdentifier", Str()),
			P("mode", Enum(ClientModes...)),
			P("instanceId", Str()),
		)),
		P("caps", StrArray()),
		P("commands", StrArray()),
		// Sent by newer reference clients (the Control UI); accepted, unused
		// but for modelCatalog.
		P("computerUse", Any()),
		P("workerRuns", Any()),
		P("modelCatalog", Any()), // {sessionKey} or {agentId}: see CapModelCatalogSnapshot
		P("permissions", OpenObject()),
		P("pathEnv", Str()),
		P("role", Enum(RoleOperator, RoleNode, RoleWorker)),
		P("scopes", StrArray()),
		P("device", Object([]string{"id", "publicKey", "signature", "signedAt"},
			P("id", NonEmptyStr()),
			P("publicKey", NonEmptyStr()),
			P("signature", NonEmptyStr()),
			P("signedAt", Int(0)),
			P("nonce", Str()),
		)),
		P("auth", Object(nil,
			P("token", Str()),
			P("password", Str()),
			P("deviceToken", Str()),
			P("bootstrapToken", Str()),
			P("approvalRuntimeToken", Str()),
			P("agentRuntimeIdentityToken", Str()),
		)),
		P("locale", Str()),
		P("userAgent", Str()),
	)
}

// DecodeConnect validates and decodes connect params. Failures read
// "invalid connect params: <reason>".
func DecodeConnect(params json.RawMessage) (*ConnectParams, error) {
	var p ConnectParams
	if err := DecodeParams(MethodConnect, params, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Challenge is the payload of the connect.challenge event.
type Challenge struct {
	Nonce string `json:"nonce"`
	TS    int64  `json:"ts"`
	// Capabilities are what the client may ask for in connect: the
	// reference's Control UI asks for a models.snapshot only when they
	// list CapModelCatalogSnapshot.
	Capabilities []string `json:"capabilities,omitempty"`
}

// HelloOK is the payload of a successful connect response.
type HelloOK struct {
	Type     string      `json:"type"` // always "hello-ok"
	Protocol int         `json:"protocol"`
	Server   ServerInfo  `json:"server"`
	Features Features    `json:"features"`
	Snapshot Snapshot    `json:"snapshot"`
	Auth     HelloAuth   `json:"auth"`
	Policy   HelloPolicy `json:"policy"`
}

// HelloOKType is HelloOK.Type.
const HelloOKType = "hello-ok"

// ServerInfo identifies the gateway and this connection.
type ServerInfo struct {
	Version string `json:"version"`
	ConnID  string `json:"connId"`
}

// Features lists exactly the methods the gateway implements and the events
// it emits.
type Features struct {
	Methods []string `json:"methods"`
	Events  []string `json:"events"`
	// Capabilities names optional contracts the gateway honours (the
	// reference's GATEWAY_SERVER_CAPS), such as "published-model-catalog".
	Capabilities []string `json:"capabilities,omitempty"`
}

// CapSessionScopedEvents is the client capability (connect caps) that
// limits the chat and agent events a connection receives to the sessions it
// sends to or subscribes to (the reference's "session-scoped-events").
const CapSessionScopedEvents = "session-scoped-events"

// CapModelCatalogSnapshot is the client capability (connect caps) with
// which the reference's Control UI, naming a scope in modelCatalog, gets
// the model catalogue as a models.snapshot event right after hello-ok.
const CapModelCatalogSnapshot = "model-catalog-snapshot"

// ClientIDControlUI is the reference's Control UI's client.id.
const ClientIDControlUI = "openclaw-control-ui"

// EventModelsSnapshot carries {target, scope, catalog}: the modelCatalog
// the client asked for, the scope it resolved to, and models.list's
// answer for it.
const EventModelsSnapshot = "models.snapshot"

// CapPublishedModelCatalog says models.list answers from the gateway's
// model catalogue; the OpenClaw CLI's "models list" requires it.
const CapPublishedModelCatalog = "published-model-catalog"

// Snapshot is the state a client starts from.
type Snapshot struct {
	Presence        []json.RawMessage `json:"presence"`
	Health          Health            `json:"health"`
	StateVersion    StateVersion      `json:"stateVersion"`
	UptimeMs        int64             `json:"uptimeMs"`
	AuthMode        string            `json:"authMode,omitempty"`
	SessionDefaults *SessionDefaults  `json:"sessionDefaults,omitempty"`
}

// Health is the health snapshot, also the result of the health method.
type Health struct {
	OK             bool   `json:"ok"`
	TS             int64  `json:"ts"`
	DurationMs     int64  `json:"durationMs"`
	DefaultAgentID string `json:"defaultAgentId,omitempty"`
}

// SessionDefaults tell UIs how sessions are keyed.
type SessionDefaults struct {
	DefaultAgentID    string `json:"defaultAgentId"`
	ModelConfigured   bool   `json:"modelConfigured"`
	Ownership         string `json:"ownership"`
	SelectionRequired bool   `json:"selectionRequired"`
	MainKey           string `json:"mainKey"`
	MainSessionKey    string `json:"mainSessionKey"`
	Scope             string `json:"scope"`
}

// HelloAuth is what the connection was granted.
type HelloAuth struct {
	// Method is how the client authenticated: "token", "password" or
	// "none".
	Method string   `json:"method,omitempty"`
	Role   string   `json:"role"`
	Scopes []string `json:"scopes"`
}

// HelloPolicy are the limits the client must respect.
type HelloPolicy struct {
	MaxPayload       int64             `json:"maxPayload"`
	MaxBufferedBytes int64             `json:"maxBufferedBytes"`
	TickIntervalMs   int64             `json:"tickIntervalMs"`
	Attachments      *AttachmentPolicy `json:"attachments,omitempty"`
}

// AttachmentPolicy is hello-ok's policy.attachments: the decoded-size
// ceilings of chat attachments.
type AttachmentPolicy struct {
	MaxBytes      int64 `json:"maxBytes"`
	MaxImageBytes int64 `json:"maxImageBytes"`
}

// Tick is the payload of the tick event.
type Tick struct {
	TS int64 `json:"ts"`
}

// Shutdown is the payload of the shutdown event.
type Shutdown struct {
	Reason            string `json:"reason"`
	RestartExpectedMs *int64 `json:"restartExpectedMs,omitempty"`
}
