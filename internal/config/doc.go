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
// re-implement them. The run-time components do not read a *Config: the
// daemon resolves it once with package settings into the typed values they
// take.
//
// Config is a leaf: it imports only the standard library, the JSON5 decoder
// and the session key model (for agent ids), and may be imported by
// settings, daemon, cli and any package that needs a configuration type.
// It must not import them back.
package config
