package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Validate checks c and returns a *ValidationError listing every problem,
// or nil. Parse and Load call it; call it again after changing a Config in
// code.
func (c *Config) Validate() error {
	problems, _ := c.check()
	if len(problems) > 0 {
		return &ValidationError{Problems: problems}
	}
	return nil
}

// checker collects problems and warnings about one Config.
type checker struct {
	c        *Config
	problems []Problem
	warnings []Warning
}

func path(keys ...string) keyPath {
	var p keyPath
	for _, k := range keys {
		p = p.key(k)
	}
	return p
}

func (k *checker) locate(p keyPath) (string, int) {
	if o := k.c.origin(p); o != "" {
		return o, 0
	}
	return k.c.file, k.c.src.lineOf(p)
}

func (k *checker) fail(p keyPath, format string, args ...any) {
	file, line := k.locate(p)
	k.problems = append(k.problems, Problem{File: file, Line: line, Path: p.String(), Message: fmt.Sprintf(format, args...)})
}

func (k *checker) warn(p keyPath, format string, args ...any) {
	file, line := k.locate(p)
	k.warnings = append(k.warnings, Warning{File: file, Line: line, Path: p.String(), Message: fmt.Sprintf(format, args...)})
}

// enum reports a problem when v is set but its normalised form is not one
// of allowed.
func (k *checker) enum(p keyPath, v string, allowed ...string) {
	if strings.TrimSpace(v) == "" || slices.Contains(allowed, norm(v)) {
		return
	}
	k.fail(p, "must be one of %s, got %q", quoteList(allowed), v)
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// intRange reports a problem when v is set and outside lo..hi.
func (k *checker) intRange(p keyPath, v *int, lo, hi int) {
	if v == nil || (*v >= lo && *v <= hi) {
		return
	}
	k.fail(p, "must be between %d and %d, got %d", lo, hi, *v)
}

// intMin reports a problem when v is set and below lo.
func (k *checker) intMin(p keyPath, v *int, lo int) {
	if v == nil || *v >= lo {
		return
	}
	if lo == 1 {
		k.fail(p, "must be a positive integer, got %d", *v)
		return
	}
	k.fail(p, "must be at least %d, got %d", lo, *v)
}

// check runs every rule. Problems and warnings come back sorted by line.
func (c *Config) check() ([]Problem, []Warning) {
	k := &checker{c: c}
	k.session()
	k.tools()
	k.agents()
	k.models()
	k.gateway()
	k.logging()
	k.messages()
	k.storage()
	k.mcp()
	k.a2a()
	k.irc()
	k.telegram()
	sortByLine(k.problems, func(p Problem) int { return p.Line })
	sortByLine(k.warnings, func(w Warning) int { return w.Line })
	return k.problems, k.warnings
}

func sortByLine[T any](s []T, line func(T) int) {
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(line(a), line(b)) })
}

func (k *checker) session() {
	s := k.c.Session
	k.enum(path("session", "scope"), s.Scope, "per-sender", "global")
	k.enum(path("session", "dmScope"), s.DMScope, "main", "per-peer", "per-channel-peer", "per-account-channel-peer")
	if s.SendPolicy != nil {
		sp := path("session", "sendPolicy")
		k.enum(sp.key("default"), s.SendPolicy.Default, "allow", "deny")
		for i, r := range s.SendPolicy.Rules {
			rp := sp.key("rules").index(i)
			k.enum(rp.key("action"), r.Action, "allow", "deny")
			if r.Match != nil {
				k.enum(rp.key("match").key("chatType"), r.Match.ChatType, "direct", "group", "channel", "dm")
			}
		}
	}
	k.intRange(path("session", "agentToAgent", "maxPingPongTurns"), s.AgentToAgent.MaxPingPongTurns, 0, maxPingPongTurnsMax)
	sp := path("session")
	if r := k.c.Session.Reset; r != nil {
		k.sessionReset(sp.key("reset"), *r)
	}
	for name, r := range k.c.Session.ResetByType {
		k.enum(sp.key("resetByType"), name, "direct", "group", "thread")
		k.sessionReset(sp.key("resetByType").key(name), r)
	}
	for name, r := range k.c.Session.ResetByChannel {
		k.sessionReset(sp.key("resetByChannel").key(name), r)
	}
}

func (k *checker) tools() {
	t := k.c.Tools
	k.enum(path("tools", "sessions", "visibility"), t.Sessions.Visibility, "self", "tree", "agent", "all")
	ap := path("tools", "sessions_spawn", "attachments")
	a := t.SessionsSpawn.Attachments
	k.intMin(ap.key("maxTotalBytes"), a.MaxTotalBytes, 1)
	k.intMin(ap.key("maxFiles"), a.MaxFiles, 1)
	k.intMin(ap.key("maxFileBytes"), a.MaxFileBytes, 1)
	k.toolSelection(path("tools"), t.Profile, t.Allow, t.AlsoAllow, "tools policy")
	k.toolsExec()
	k.hooks()
}

// validAgentID reports whether a normalised agent id is usable inside
// session keys ("agent:<id>:..."): a letter or digit, then letters, digits,
// '_' and '-', at most 64 bytes. Such ids are unchanged by any later
// normalisation.
func validAgentID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '_' || r == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

func (k *checker) agents() {
	d := k.c.Agents.Defaults
	dp := path("agents", "defaults")
	k.modelRef(dp.key("model"), d.Model)
	k.intMin(dp.key("timeoutSeconds"), d.TimeoutSeconds, 1)
	sp := dp.key("subagents")
	s := d.Subagents
	k.intRange(sp.key("maxSpawnDepth"), s.MaxSpawnDepth, 1, maxSpawnDepthMax)
	k.intRange(sp.key("maxChildrenPerAgent"), s.MaxChildrenPerAgent, 1, maxChildrenPerAgentMax)
	k.intMin(sp.key("maxConcurrent"), s.MaxConcurrent, 1)
	k.intMin(sp.key("archiveAfterMinutes"), s.ArchiveAfterMinutes, 1)
	k.intMin(sp.key("runTimeoutSeconds"), s.RunTimeoutSeconds, 0)
	k.intMin(sp.key("announceTimeoutMs"), s.AnnounceTimeoutMs, 1)
	k.modelRef(sp.key("model"), s.Model)
	k.enum(dp.key("sandbox").key("mode"), d.Sandbox.Mode, "off", "non-main", "all")
	k.enum(dp.key("sandbox").key("sessionToolsVisibility"), d.Sandbox.SessionToolsVisibility, "spawned", "all")
	k.enum(dp.key("sandbox").key("workspaceAccess"), d.Sandbox.WorkspaceAccess, "none", "ro", "rw")
	k.enum(dp.key("sandbox").key("network"), d.Sandbox.Network, "none", "host")
	k.enum(dp.key("sandbox").key("backend"), d.Sandbox.Backend, "bubblewrap", "bwrap", "docker")
	k.enum(dp.key("sandbox").key("scope"), d.Sandbox.Scope, "agent", "session", "shared")
	k.sandboxDocker(dp.key("sandbox").key("docker"), d.Sandbox.Docker)
	if pr := d.Sandbox.Prune; pr != nil {
		if pr.IdleHours != nil && *pr.IdleHours < 0 {
			k.fail(dp.key("sandbox").key("prune").key("idleHours"), "must not be negative (0 turns the rule off)")
		}
		if pr.MaxAgeDays != nil && *pr.MaxAgeDays < 0 {
			k.fail(dp.key("sandbox").key("prune").key("maxAgeDays"), "must not be negative (0 turns the rule off)")
		}
	}
	k.compaction(dp.key("compaction"), &d.Compaction)
	k.contextPruning(dp.key("contextPruning"), &d.ContextPruning)
	k.budget(dp.key("budget"), d.Budget)

	seen := make(map[string]int)
	firstDefault := -1
	for i, a := range k.c.Agents.List {
		p := path("agents", "list").index(i)
		id := norm(a.ID)
		switch {
		case id == "":
			k.fail(p.key("id"), "agent id is required")
		case !validAgentID(id):
			k.fail(p.key("id"), "invalid agent id %q: use a letter or digit, then letters, digits, '_' and '-' (at most 64)", a.ID)
		default:
			if j, dup := seen[id]; dup {
				k.fail(p.key("id"), "duplicate agent id %q (also agents.list[%d])", id, j)
			} else {
				seen[id] = i
			}
		}
		if a.Default {
			if firstDefault >= 0 {
				k.warn(p.key("default"), "more than one agent has default: true; agents.list[%d] is the default", firstDefault)
			} else {
				firstDefault = i
			}
		}
		k.modelRef(p.key("model"), a.Model)
		k.modelRef(p.key("subagents").key("model"), a.Subagents.Model)
		k.enum(p.key("sandbox").key("mode"), a.Sandbox.Mode, "off", "non-main", "all")
		k.enum(p.key("sandbox").key("workspaceAccess"), a.Sandbox.WorkspaceAccess, "none", "ro", "rw")
		k.enum(p.key("sandbox").key("network"), a.Sandbox.Network, "none", "host")
		k.enum(p.key("sandbox").key("backend"), a.Sandbox.Backend, "bubblewrap", "bwrap", "docker")
		k.enum(p.key("sandbox").key("scope"), a.Sandbox.Scope, "agent", "session", "shared")
		k.sandboxDocker(p.key("sandbox").key("docker"), a.Sandbox.Docker)
		if a.Tools != nil {
			k.toolSelection(p.key("tools"), a.Tools.Profile, a.Tools.Allow, a.Tools.AlsoAllow, "agent tools")
			if a.Tools.Exec != nil {
				k.execApprovals(p.key("tools").key("exec"), *a.Tools.Exec)
			}
		}
		k.budget(p.key("budget"), a.Budget)
	}
}

// sandboxDocker checks the Docker settings the sandbox would refuse at
// run time and can be told now: a network joining the host's or another
// container's namespaces, and binds that are not absolute.
func (k *checker) sandboxDocker(p keyPath, d *SandboxDocker) {
	if d == nil {
		return
	}
	if n := strings.TrimSpace(d.Network); n == "host" || strings.HasPrefix(n, "container:") {
		k.fail(p.key("network"), "network %q is blocked: use \"none\" (default), \"bridge\" or a custom network", n)
	}
	for i, b := range d.Binds {
		parts := strings.Split(b, ":")
		if len(parts) < 2 || len(parts) > 3 || !strings.HasPrefix(parts[0], "/") || !strings.HasPrefix(parts[1], "/") {
			k.fail(p.key("binds").index(i), "bind %q: want \"/host/path:/container/path[:ro|rw]\"", b)
		}
	}
	if d.PidsLimit != nil && *d.PidsLimit < -1 {
		k.fail(p.key("pidsLimit"), "must be -1 (unlimited) or more")
	}
	if d.Cpus != nil && *d.Cpus < 0 {
		k.fail(p.key("cpus"), "must not be negative")
	}
	for _, name := range slices.Sorted(maps.Keys(d.Ulimits)) {
		u := d.Ulimits[name]
		switch {
		case !slices.Contains(ulimitNames, name):
			k.fail(p.key("ulimits").key(name), "unknown ulimit %q: want one of %s", name, strings.Join(ulimitNames, ", "))
		case u.Hard != -1 && (u.Soft == -1 || u.Soft > u.Hard):
			k.fail(p.key("ulimits").key(name), "soft limit %d is above the hard limit %d", u.Soft, u.Hard)
		}
	}
}

// ulimitNames are the rlimits Docker accepts in --ulimit.
var ulimitNames = []string{"core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}

// modelRef checks a model selection. Every ref may be "<provider>/<model>"
// or, in merge mode, a bare model name; with models.mode "replace" it must
// name a configured provider and, when that provider lists its models, one
// of them.
func (k *checker) modelRef(p keyPath, r *ModelRef) {
	if r == nil {
		return
	}
	pp := p
	if k.c.src.has(p.key("primary")) {
		pp = p.key("primary")
	}
	k.oneModelRef(pp, r.Primary)
	for i, f := range r.Fallbacks {
		k.oneModelRef(p.key("fallbacks").index(i), f)
	}
}

func (k *checker) oneModelRef(p keyPath, ref string) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		k.fail(p, "model must not be empty")
		return
	}
	prov, model := SplitModelRef(ref)
	hasSlash := strings.Contains(ref, "/")
	if hasSlash && (prov == "" || model == "") {
		k.fail(p, "model %q must have the form \"<provider>/<model>\"", ref)
		return
	}
	if k.c.ModelsMode() != "replace" {
		return
	}
	if !hasSlash {
		k.fail(p, "model %q must have the form \"<provider>/<model>\" when models.mode is \"replace\"", ref)
		return
	}
	var pv *Provider
	for id, v := range k.c.Models.Providers {
		if norm(id) == norm(prov) && v != nil {
			pv = v
		}
	}
	if pv == nil {
		k.fail(p, "model %q names provider %q, which is not in models.providers (models.mode is \"replace\")", ref, prov)
		return
	}
	if len(pv.Models) > 0 && !slices.ContainsFunc(pv.Models, func(m ModelDef) bool { return strings.TrimSpace(m.ID) == model }) {
		k.fail(p, "model %q is not listed in models.providers.%s.models", ref, prov)
	}
}

func (k *checker) models() {
	m := k.c.Models
	mp := path("models")
	k.enum(mp.key("mode"), m.Mode, "merge", "replace")
	seen := make(map[string]string)
	for _, id := range slices.Sorted(maps.Keys(m.Providers)) {
		pv := m.Providers[id]
		p := mp.key("providers").key(id)
		nid := norm(id)
		switch {
		case nid == "" || strings.ContainsAny(nid, "/ \t"):
			k.fail(p, "invalid provider id %q: it must be non-empty without '/' or spaces", id)
		case seen[nid] != "":
			k.fail(p, "duplicate provider id %q (also %q)", nid, seen[nid])
		default:
			seen[nid] = id
		}
		if pv == nil {
			continue
		}
		k.enum(p.key("api"), pv.API, APIOpenAICompletions, APIAnthropicMessages)
		if u := strings.TrimSpace(pv.BaseURL); u != "" {
			if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
				k.fail(p.key("baseUrl"), "must be an http or https URL, got %q", pv.BaseURL)
			}
		} else if nid != "openai" && nid != "anthropic" && nid != OfflineProvider {
			// scripted without a baseUrl configures the built-in offline
			// model (its models' context windows).
			k.fail(p, "baseUrl is required for a custom provider")
		}
		k.vars(p.key("apiKey"), pv.APIKey)
		for _, h := range slices.Sorted(maps.Keys(pv.Headers)) {
			k.vars(p.key("headers").key(h), pv.Headers[h])
		}
		models := make(map[string]int)
		for i, md := range pv.Models {
			ip := p.key("models").index(i)
			mid := strings.TrimSpace(md.ID)
			if mid == "" {
				k.fail(ip.key("id"), "model id is required")
			} else if j, dup := models[mid]; dup {
				k.fail(ip.key("id"), "duplicate model id %q (also models[%d])", mid, j)
			} else {
				models[mid] = i
			}
			for j, in := range md.Input {
				k.enum(ip.key("input").index(j), in, "text", "image")
			}
			k.intMin(ip.key("contextWindow"), md.ContextWindow, 1)
			k.intMin(ip.key("contextTokens"), md.ContextTokens, 1)
			k.intMin(ip.key("maxTokens"), md.MaxTokens, 1)
			if c := md.Cost; c != nil {
				for _, f := range []struct {
					name string
					v    float64
				}{{"input", c.Input}, {"output", c.Output}, {"cacheRead", c.CacheRead}, {"cacheWrite", c.CacheWrite}} {
					if f.v < 0 {
						k.fail(ip.key("cost").key(f.name), "must not be negative, got %v", f.v)
					}
				}
			}
		}
	}
}

// vars reports "${NAME}" references in s whose variable is unset.
func (k *checker) vars(p keyPath, s string) {
	_, missing := expandVars(s, k.c.env)
	for _, name := range missing {
		k.fail(p, "environment variable %s is not set", name)
	}
}

func (k *checker) gateway() {
	g := k.c.Gateway
	gp := path("gateway")
	if rl := g.Auth.RateLimit; rl != nil {
		rp := gp.key("auth").key("rateLimit")
		k.intRange(rp.key("maxAttempts"), rl.MaxAttempts, 1, 1_000_000)
		k.intRange(rp.key("windowMs"), rl.WindowMs, 1, 86_400_000)
		k.intRange(rp.key("lockoutMs"), rl.LockoutMs, 1, 86_400_000)
	}
	for i, o := range g.ControlUI.AllowedOrigins {
		if u, err := url.Parse(strings.TrimSpace(o)); o != "*" && (err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/")) {
			k.fail(gp.key("controlUi").key("allowedOrigins").index(i), "must be an origin such as \"https://ui.example.com\" (scheme and host, no path), got %q", o)
		}
	}
	k.publicOrigin(gp.key("publicOrigin"), g.PublicOrigin)
	k.enum(gp.key("mode"), g.Mode, "local", "remote")
	switch m := norm(g.Reload.Mode); m {
	case "", ReloadHybrid, ReloadOff:
	case "hot", "restart":
		k.warn(gp.key("reload").key("mode"), "%q is retired; treated as %q", m, ReloadHybrid)
	default:
		k.fail(gp.key("reload").key("mode"), "must be one of %s, got %q", quoteList([]string{ReloadHybrid, ReloadOff}), g.Reload.Mode)
	}
	k.intRange(gp.key("port"), g.Port, 1, 65535)
	bind, alias := parseBind(g.Bind)
	switch alias {
	case "":
	case "invalid":
		k.fail(gp.key("bind"), "must be \"loopback\", \"lan\" or an IP address, got %q", g.Bind)
	default:
		k.warn(gp.key("bind"), "%q is not supported; treated as %q", alias, bind)
	}
	ap := gp.key("auth")
	k.enum(ap.key("mode"), g.Auth.Mode, AuthToken, AuthPassword, AuthNone)
	k.vars(ap.key("token"), g.Auth.Token)
	k.vars(ap.key("password"), g.Auth.Password)
	auth := k.c.GatewayAuth()
	switch auth.Mode {
	case AuthToken:
		if auth.Token == "" {
			k.fail(ap.key("mode"), "auth mode \"token\" needs gateway.auth.token or %s", EnvGatewayToken)
		}
	case AuthPassword:
		if auth.Password == "" {
			k.fail(ap.key("mode"), "auth mode \"password\" needs gateway.auth.password or %s", EnvGatewayPassword)
		}
	case AuthNone:
		if alias != "invalid" && !bindIsLoopback(bind) {
			k.fail(gp.key("bind"), "binding to %q without auth is refused; set gateway.auth.mode to \"token\" or \"password\"", bind)
		}
	}
}

func (k *checker) logging() {
	l := k.c.Logging
	lp := path("logging")
	k.enum(lp.key("redactSensitive"), l.RedactSensitive, "off", "tools")
	k.enum(lp.key("level"), l.Level, LogLevels...)
	k.enum(lp.key("consoleLevel"), l.ConsoleLevel, LogLevels...)
	k.enum(lp.key("consoleStyle"), l.ConsoleStyle, "pretty", "json")
	if l.MaxFileBytes != nil && *l.MaxFileBytes <= 0 {
		k.fail(lp.key("maxFileBytes"), "must be a positive number of bytes")
	}
	for i, pat := range l.RedactPatterns {
		if _, err := regexp.Compile(pat); err != nil {
			k.warn(lp.key("redactPatterns").index(i), "pattern is not a valid Go regular expression and is ignored: %v", err)
		}
	}
}

// queueModeAliases and queueDropAliases pair every spelling the queue
// settings accept with the canonical name. They mirror the policy
// package's normalisers (config stays a leaf); a test in package settings
// checks that the two agree. Static tables, not map literals: a
// package-level map is built at every process start.
var (
	queueModeAliases = []alias{
		{"interrupt", "interrupt"}, {"interrupts", "interrupt"}, {"abort", "interrupt"},
		{"steer", "steer"}, {"steering", "steer"},
		{"followup", "followup"}, {"follow-ups", "followup"}, {"followups", "followup"},
		{"collect", "collect"}, {"coalesce", "collect"},
	}
	queueDropAliases = []alias{
		{"old", "old"}, {"oldest", "old"}, {"new", "new"}, {"newest", "new"}, {"summarize", "summarize"}, {"summary", "summarize"},
	}
)

// alias is one accepted spelling and its canonical name.
type alias struct{ spelling, name string }

// knownAlias reports whether s is one of the table's spellings.
func knownAlias(table []alias, s string) bool {
	for _, a := range table {
		if a.spelling == s {
			return true
		}
	}
	return false
}

// aliasMap returns the table as a new map from spelling to name.
func aliasMap(table []alias) map[string]string {
	m := make(map[string]string, len(table))
	for _, a := range table {
		m[a.spelling] = a.name
	}
	return m
}

// QueueModeAliases returns a copy of the queue mode spellings config
// accepts, each mapped to its canonical mode.
func QueueModeAliases() map[string]string { return aliasMap(queueModeAliases) }

// QueueDropAliases returns a copy of the queue drop spellings config
// accepts, each mapped to its canonical policy.
func QueueDropAliases() map[string]string { return aliasMap(queueDropAliases) }

func (k *checker) messages() {
	q := k.c.Messages.Queue
	qp := path("messages", "queue")
	modes := []string{"steer", "followup", "collect", "interrupt"}
	mode := func(p keyPath, v string) {
		if v != "" {
			if !knownAlias(queueModeAliases, strings.ToLower(strings.TrimSpace(v))) {
				k.fail(p, "must be one of %s, got %q", quoteList(modes), v)
			}
		}
	}
	mode(qp.key("mode"), q.Mode)
	for _, ch := range slices.Sorted(maps.Keys(q.ByChannel)) {
		mode(qp.key("byChannel").key(ch), q.ByChannel[ch])
	}
	k.intMin(qp.key("cap"), q.Cap, 1)
	if q.Drop != "" {
		if !knownAlias(queueDropAliases, strings.ToLower(strings.TrimSpace(q.Drop))) {
			k.fail(qp.key("drop"), "must be one of %s, got %q", quoteList([]string{"summarize", "old", "new"}), q.Drop)
		}
	}
	for _, ch := range slices.Sorted(maps.Keys(q.DebounceMsByChannel)) {
		v := q.DebounceMsByChannel[ch]
		k.intMin(qp.key("debounceMsByChannel").key(ch), &v, 0)
	}
}

// publicOrigin checks gateway.publicOrigin as the reference does: an
// HTTPS origin without path, query or credentials; HTTP only for the
// literal loopback hosts.
func (k *checker) publicOrigin(p keyPath, s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	k.vars(p, s)
	exp, _ := expandVars(s, k.c.env)
	u, err := url.Parse(exp)
	switch {
	case err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		k.fail(p, "must be an origin such as \"https://gateway.example.com\" (scheme and host, no path, query or credentials), got %q", s)
	case u.Scheme == "https":
	case u.Scheme == "http" && slices.Contains([]string{"localhost", "127.0.0.1", "::1"}, u.Hostname()):
	default:
		k.fail(p, "must be an https origin (http only for localhost, 127.0.0.1 or [::1]), got %q", s)
	}
}
