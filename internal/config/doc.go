// Package config owns the one Config of a Switchboard gateway. It is read
// in three layers: the JSON5 file (comments, trailing commas and unquoted
// keys allowed) using the reference's openclaw.json key names, then the
// environment (SWITCHBOARD_* variables and provider API keys), then
// command-line flags (ApplyFlags).
//
// Parse and Load never stop at the first mistake: unknown keys come back as
// Warnings, and every type, range and consistency problem is collected into
// one *ValidationError, each with file:line and the dotted key path.
// Defaults and normalisation live in accessor methods on *Config (for
// example Visibility, MaxSpawnDepth, AgentWorkspace), so callers never
// re-implement them. No component reads a *Config: package settings loads
// it and resolves it once into the typed values they take, and passes on
// the names and value types they need.
//
// Config is a leaf: it imports only the standard library, the JSON5 decoder
// and the session key model (for agent ids), and may be imported by
// settings only (tests may use it anywhere: archtest's
// TestOnlySettingsReadsConfig). It must not import settings back.
package config
