package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// redacted replaces a secret wherever a Config is shown.
const redacted = "***"

// UnmarshalJSON accepts a plain model string or {primary, fallbacks}.
func (r *ModelRef) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = ModelRef{Primary: s}
		return nil
	}
	type plain ModelRef
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("config.ModelRef: %w", err)
	}
	*r = ModelRef(p)
	return nil
}

// clone returns a deep copy of c.
func (c *Config) clone() *Config {
	b, err := json.Marshal(c)
	if err != nil {
		panic("config: clone: " + err.Error()) // every field is plain data
	}
	out := new(Config)
	if err := json.Unmarshal(b, out); err != nil {
		panic("config: clone: " + err.Error())
	}
	out.file, out.src, out.env, out.paths = c.file, c.src, c.env, c.paths
	if c.origins != nil {
		out.origins = make(map[string]string, len(c.origins))
		for k, v := range c.origins {
			out.origins[k] = v
		}
	}
	return out
}

// hide redacts a secret unless it is empty or only a "${NAME}" reference.
func hide(s string) string {
	if s == "" || envRef(s) {
		return s
	}
	return redacted
}

// Redacted returns a copy of c for display: provider API keys and header
// values and the gateway token and password are replaced by "***" (a bare
// "${NAME}" reference is kept), and its environment hides every variable
// except HOME and the path variables, so no accessor of the copy can
// return a secret either.
func (c *Config) Redacted() *Config {
	out := c.clone()
	for _, p := range out.Models.Providers {
		if p == nil {
			continue
		}
		p.APIKey = hide(p.APIKey)
		for k, v := range p.Headers {
			p.Headers[k] = hide(v)
		}
	}
	out.Gateway.Auth.Token = hide(out.Gateway.Auth.Token)
	out.Gateway.Auth.Password = hide(out.Gateway.Auth.Password)
	out.Storage.URL = hide(out.Storage.URL)
	if r := out.Channels.IRC; r != nil {
		r.Password = hide(r.Password)
		if r.NickServ != nil {
			r.NickServ.Password = hide(r.NickServ.Password)
		}
	}
	if r := out.Channels.Telegram; r != nil {
		r.BotToken = hide(r.BotToken)
		r.WebhookSecret = hide(r.WebhookSecret)
	}
	env := c.env
	out.env = func(name string) string {
		switch name {
		case "HOME", EnvStateDir, EnvConfig, EnvOpenAIBaseURL:
			return env.get(name)
		}
		if env.get(name) != "" {
			return redacted
		}
		return ""
	}
	return out
}

// String renders the configuration as indented JSON with secrets redacted.
// It has a value receiver so that printing a Config value is safe too.
func (c Config) String() string {
	b, err := json.MarshalIndent(c.Redacted(), "", "  ")
	if err != nil {
		return "config: " + err.Error()
	}
	return string(b)
}

// GoString is String, so that %#v does not print secrets either.
func (c Config) GoString() string { return c.String() }

// String shows a with its secrets redacted.
func (a GatewayAuth) String() string {
	return fmt.Sprintf("{mode:%s token:%s password:%s}", a.Mode, hide(a.Token), hide(a.Password))
}

// GoString is String, so that %#v does not print secrets either.
func (a GatewayAuth) GoString() string { return a.String() }

// String shows p with its API key and header values redacted.
func (p Provider) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{baseUrl:%s api:%s apiKey:%s", p.BaseURL, p.API, hide(p.APIKey))
	if len(p.Headers) > 0 {
		b.WriteString(" headers:")
		h := make(map[string]string, len(p.Headers))
		for k, v := range p.Headers {
			h[k] = hide(v)
		}
		fmt.Fprint(&b, h)
	}
	fmt.Fprintf(&b, " models:%d}", len(p.Models))
	return b.String()
}

// GoString is String, so that %#v does not print secrets either.
func (p Provider) GoString() string { return p.String() }
