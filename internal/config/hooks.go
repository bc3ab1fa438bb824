package config

// Hooks is the "hooks" section: the webhook ingress on the gateway port.
type Hooks struct {
	// Enabled turns the ingress on (default off).
	Enabled bool `json:"enabled,omitempty"`
	// Token is the shared secret every hook request must carry.
	Token string `json:"token,omitempty"`
	// Path is the base path (default "/hooks").
	Path string `json:"path,omitempty"`
	// MaxBodyBytes bounds a request body (default 256 KiB).
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
}
