package sessionkey

// Session scopes (config session.scope).
const (
	// ScopePerSender is the default scope: each sender gets its own
	// sessions and the main alias is the main key.
	ScopePerSender = "per-sender"
	// ScopeGlobal shares one session, keyed GlobalKey, which the session
	// tools show as "main".
	ScopeGlobal = "global"
)

// MainAlias is the main-session alias of a configuration, the reference's
// resolveMainSessionAlias result. The session tools show the main session
// as "main" and accept "main" for it; MainAlias maps between that display
// form and internal keys. The zero value is not useful; use NewMainAlias.
type MainAlias struct {
	// MainKey is the normalized session.mainKey (default "main").
	MainKey string
	// Alias is the internal key "main" stands for: GlobalKey when Scope is
	// ScopeGlobal, else MainKey.
	Alias string
	// Scope is session.scope, ScopePerSender when unset.
	Scope string
}

// NewMainAlias resolves the main alias from config session.scope and
// session.mainKey, mirroring resolveMainSessionAlias: MainKey =
// NormalizeMainKey(mainKey); an empty scope means ScopePerSender (the
// reference only defaults an absent scope; config validation admits no
// empty one); Alias is "global" when scope is exactly "global", else MainKey.
//
//	NewMainAlias("global", " Primary ") // {MainKey: "primary", Alias: "global", Scope: "global"}
func NewMainAlias(scope, mainKey string) MainAlias {
	a := MainAlias{MainKey: NormalizeMainKey(mainKey), Scope: scope}
	if a.Scope == "" {
		a.Scope = ScopePerSender
	}
	a.Alias = a.MainKey
	if a.Scope == ScopeGlobal {
		a.Alias = GlobalKey
	}
	return a
}

// Display returns the key to show for an internal key: "main" when key
// equals Alias or MainKey (exact match), else key unchanged. It mirrors
// resolveDisplaySessionKey.
func (a MainAlias) Display(key string) string {
	if key == a.Alias || key == a.MainKey {
		return DefaultMainKey
	}
	return key
}

// Internal returns the internal key for a key a tool caller gave: Alias for
// exactly "main", else key unchanged. It mirrors resolveInternalSessionKey.
func (a MainAlias) Internal(key string) string {
	if key == DefaultMainKey {
		return a.Alias
	}
	return key
}

// RequesterKey returns the effective requester key of a tool call made from
// the session callerKey: Alias when callerKey is blank (the caller has no
// session), else Internal of the trimmed callerKey.
func (a MainAlias) RequesterKey(callerKey string) string {
	k := trim(callerKey)
	if k == "" {
		return a.Alias
	}
	return a.Internal(k)
}
