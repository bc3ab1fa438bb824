package settings

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/config"
)

// The names below are package config's, passed through so that the
// components name them here and only this package (with the loader's call
// sites) imports config: a component takes resolved values, never a
// *config.Config.

// Env looks up environment variables (config.Env).
type Env = config.Env

// Paths are the resolved state dir and config file (config.Paths).
type Paths = config.Paths

// Warning is a configuration warning: a key that is accepted but ignored
// (config.Warning).
type Warning = config.Warning

// GatewayAuth is gateway.auth resolved (config.GatewayAuth).
type GatewayAuth = config.GatewayAuth

// StorageSettings is storage resolved (config.StorageSettings).
type StorageSettings = config.StorageSettings

// MCPServerSettings is one mcp.servers entry resolved
// (config.MCPServerSettings).
type MCPServerSettings = config.MCPServerSettings

// Provider is one configured model provider, defaults applied
// (config.Provider).
type Provider = config.Provider

// ModelDef is one model a provider lists (config.ModelDef).
type ModelDef = config.ModelDef

// MemorySearch is memory.search (config.MemorySearch).
type MemorySearch = config.MemorySearch

// WebFetch is tools.web.fetch (config.ToolsWebFetch).
type WebFetch = config.ToolsWebFetch

// AuthRateLimit is gateway.auth.rateLimit (config.AuthRateLimit).
type AuthRateLimit = config.AuthRateLimit

// LogSettings is logging resolved (config.LogSettings).
type LogSettings = config.LogSettings

// A2ASettings is channels.a2a resolved (config.A2ASettings).
type A2ASettings = config.A2ASettings

// Hooks is hooks (config.Hooks).
type Hooks = config.Hooks

// ExecSettings is tools.exec resolved (config.ExecSettings).
type ExecSettings = config.ExecSettings

// Compaction is agents.defaults.compaction resolved (config.Compaction).
type Compaction = config.Compaction

// ContextPruning is agents.defaults.contextPruning resolved
// (config.ContextPruning).
type ContextPruning = config.ContextPruning

// IRCSettings is channels.irc resolved (config.IRCSettings).
type IRCSettings = config.IRCSettings

// TelegramSettings is channels.telegram resolved (config.TelegramSettings).
type TelegramSettings = config.TelegramSettings

// TelegramGroupSettings is one Telegram group's settings
// (config.TelegramGroupSettings).
type TelegramGroupSettings = config.TelegramGroupSettings

// BotLoopSettings is a channel's bot-loop protection
// (config.BotLoopSettings).
type BotLoopSettings = config.BotLoopSettings

// ExecApprovalPolicy is an agent's tools.exec approval policy
// (config.ExecApprovalPolicy).
type ExecApprovalPolicy = config.ExecApprovalPolicy

// SchemaChild is one child of a config schema node (config.SchemaChild).
type SchemaChild = config.SchemaChild

// Gateway auth modes.
const (
	AuthToken    = config.AuthToken
	AuthPassword = config.AuthPassword
	AuthNone     = config.AuthNone
)

// Model provider APIs.
const (
	APIOpenAICompletions = config.APIOpenAICompletions
	APIAnthropicMessages = config.APIAnthropicMessages
)

// The providers' official base URLs.
const (
	DefaultOpenAIBaseURL    = config.DefaultOpenAIBaseURL
	DefaultAnthropicBaseURL = config.DefaultAnthropicBaseURL
)

// Environment variables Switchboard reads.
const (
	EnvStateDir        = config.EnvStateDir
	EnvConfig          = config.EnvConfig
	EnvGatewayToken    = config.EnvGatewayToken
	EnvGatewayPassword = config.EnvGatewayPassword
	EnvDatabaseURL     = config.EnvDatabaseURL
)

// Other configuration names.
const (
	// BackendPostgres and BackendSQLite are storage.backend's values.
	BackendPostgres = config.BackendPostgres
	BackendSQLite   = config.BackendSQLite
	// DefaultGatewayPort is gateway.port's default.
	DefaultGatewayPort = config.DefaultGatewayPort
	// GatewayTokenFile is the generated gateway token's file in the
	// state dir.
	GatewayTokenFile = config.GatewayTokenFile
	// ReloadOff is gateway.reload.mode's "off".
	ReloadOff = config.ReloadOff
)

// LogLevels returns the log levels, least verbose first (a copy of
// config.LogLevels; a package-level copy of the var would be made at
// every process start).
func LogLevels() []string { return slices.Clone(config.LogLevels) }

// OSEnv reads the process environment.
func OSEnv(name string) string { return config.OSEnv(name) }

// ResolvePaths resolves the state dir and config file from env.
func ResolvePaths(env Env) (Paths, error) { return config.ResolvePaths(env) }

// Load loads, validates and resolves the config file at path (""
// resolves it from env), with the warnings the load produced.
func Load(path string, env Env) (*Settings, []Warning, error) {
	cfg, warnings, err := config.LoadEnv(path, env)
	if err != nil {
		return nil, warnings, err
	}
	return Resolve(cfg), warnings, nil
}

// WithBind returns the settings with serve's --bind applied (validated
// again), with the warnings that produced.
func (s *Settings) WithBind(bind string) (*Settings, []Warning, error) {
	cfg, warnings, err := s.cfg.ApplyFlags(config.Flags{Bind: bind})
	if err != nil {
		return nil, warnings, err
	}
	return Resolve(cfg), warnings, nil
}

// WithGeneratedToken returns the settings serve runs with when
// gateway.auth names no mode and configures no secret: token auth with the
// token generated in the state dir (made now when created). Otherwise it
// returns s, generated false: a secret is required unless auth is
// explicitly off.
func (s *Settings) WithGeneratedToken() (out *Settings, generated, created bool, err error) {
	if s.cfg.Gateway.Auth.Mode != "" || s.Auth.Token != "" || s.Auth.Password != "" {
		return s, false, false, nil
	}
	tok, created, err := config.LoadOrCreateGatewayToken(s.StateDir)
	if err != nil {
		return nil, true, false, err
	}
	cfg, _, err := s.cfg.ApplyFlags(config.Flags{AuthMode: config.AuthToken, Token: tok})
	if err != nil {
		return nil, true, created, err
	}
	return Resolve(cfg), true, created, nil
}

// SplitModelRef splits "<provider>/<model>" at the first slash; without a
// slash the provider is "".
func SplitModelRef(ref string) (provider, model string) { return config.SplitModelRef(ref) }

// JSONSchema is the configuration's JSON Schema.
func JSONSchema() map[string]any { return config.JSONSchema() }

// LookupSchema finds the schema node at a dotted path, with its children.
func LookupSchema(schema map[string]any, path string) (node map[string]any, children []SchemaChild, norm string, ok bool) {
	return config.LookupSchema(schema, path)
}

// ReadGatewayToken reads the generated gateway token from the state dir.
func ReadGatewayToken(stateDir string) (string, error) { return config.ReadGatewayToken(stateDir) }

// ReadSecretFile reads a secret from a file (a tokenFile, passwordFile).
func ReadSecretFile(path string) (string, error) { return config.ReadSecretFile(path) }

// DisplayDatabaseURL is a database URL with its password hidden.
func DisplayDatabaseURL(raw string) string { return config.DisplayDatabaseURL(raw) }

// RedactedJSON returns the configuration with its secrets hidden, as JSON,
// for config.get.
func (s *Settings) RedactedJSON() ([]byte, error) { return json.Marshal(s.cfg.Redacted()) }

// Provider returns the configured model provider id (case-insensitive),
// defaults and environment keys applied.
func (s *Settings) Provider(id string) (Provider, bool) { return s.cfg.Provider(id) }

// ProviderAsWritten returns models.providers' entry for id
// (case-insensitive) as the file writes it: no defaults filled in, its
// "${ENV}" references kept.
func (s *Settings) ProviderAsWritten(id string) (Provider, bool) {
	for k, p := range s.cfg.Models.Providers {
		if p != nil && strings.EqualFold(strings.TrimSpace(k), strings.TrimSpace(id)) {
			return *p, true
		}
	}
	return Provider{}, false
}

// Providers returns the configured model providers by normalised id.
func (s *Settings) Providers() map[string]Provider { return s.cfg.Providers() }

// ModelWindow returns a model's configured context budget and window (0:
// not configured).
func (s *Settings) ModelWindow(providerID, modelID string) (contextTokens, contextWindow int) {
	return s.cfg.ModelWindow(providerID, modelID)
}

// EmbeddingRef is memory.search's embedding provider and model.
func (s *Settings) EmbeddingRef() (providerID, model string) { return s.cfg.EmbeddingRef() }

// ResetRule is session.reset for a session of chatType on channel (the
// by-type and by-channel overrides applied).
func (s *Settings) ResetRule(chatType, channel string) (mode string, atHour, idleMinutes int) {
	return s.cfg.ResetRule(chatType, channel)
}

// ExecApprovals is agent id's tools.exec approval policy.
func (s *Settings) ExecApprovals(id string) ExecApprovalPolicy { return s.cfg.ExecApprovals(id) }
