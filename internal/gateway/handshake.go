package gateway

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// Handshake error messages clients match on.
const (
	msgFirstMustBeConnect = "invalid handshake: first request must be connect"
	msgInvalidFrame       = "invalid request frame"
	msgProtocolMismatch   = "protocol mismatch"
	msgTokenMismatch      = "unauthorized: gateway token mismatch (use this gateway's gateway.auth.token or pair the device)"
	msgAuthRateLimited    = "unauthorized: too many failed authentication attempts (retry later)"
	msgPasswordMismatch   = "unauthorized: gateway password mismatch (use this gateway's gateway.auth.password or pair the device)"
	msgDeviceRequired     = "device identity required"
	msgPairingRequired    = "pairing required"
	msgAuthNoneRemote     = "unauthorized: gateway.auth.mode \"none\" is only allowed on a loopback listener"
	msgAuthUnsupported    = "unauthorized: unsupported gateway.auth.mode"
)

func (c *conn) sendChallenge() {
	b, _ := json.Marshal(wire.Challenge{Nonce: c.s.newID(), TS: c.s.now().UnixMilli(),
		Capabilities: []string{wire.CapModelCatalogSnapshot}})
	c.enqueue(wire.AppendEvent(nil, wire.EventConnectChallenge, b, -1), false)
}

// handshakeError is a failed connect: the error response (when the request
// had an id) and the close code.
type handshakeError struct {
	err  *wire.Error
	code websocket.StatusCode
}

// handshake handles the first frame. It reports whether the connection is
// now past hello-ok; otherwise the connection is being closed.
func (c *conn) handshake(data []byte) bool {
	f, derr := wire.Decode(data)
	id := ""
	var herr *handshakeError
	switch {
	case derr != nil:
		var de *wire.DecodeError
		if errors.As(derr, &de) && de.Type == wire.FrameRequest {
			id = de.ID
		}
		herr = &handshakeError{wire.NewError(wire.CodeInvalidRequest, msgInvalidFrame), websocket.StatusPolicyViolation}
	case f.Type != wire.FrameRequest:
		herr = &handshakeError{wire.NewError(wire.CodeInvalidRequest, msgFirstMustBeConnect), websocket.StatusPolicyViolation}
	case f.Method != wire.MethodConnect:
		id = f.ID
		herr = &handshakeError{wire.NewError(wire.CodeInvalidRequest, msgFirstMustBeConnect), websocket.StatusPolicyViolation}
	default:
		id = f.ID
		herr = c.connect(f)
		if herr == nil {
			return true
		}
	}
	if id != "" {
		c.enqueue(wire.AppendErrorResponse(nil, id, nil, herr.err), false)
	}
	c.log.Info("handshake refused", "code", herr.err.Code, "reason", herr.err.Message)
	c.closeAfterFlush(herr.code, herr.err.Message)
	return false
}

// connect validates a connect request, authenticates it and queues
// hello-ok.
func (c *conn) connect(f *wire.Frame) *handshakeError {
	s := c.s
	p, err := wire.DecodeConnect(f.Params)
	if err != nil {
		return &handshakeError{wire.NewError(wire.CodeInvalidRequest, err.Error()), websocket.StatusPolicyViolation}
	}
	proto, ok := negotiate(p.MinProtocol, p.MaxProtocol)
	if !ok {
		e := wire.NewError(wire.CodeInvalidRequest, msgProtocolMismatch).WithDetails(map[string]any{
			"code":                 wire.DetailProtocolMismatch,
			"clientMinProtocol":    p.MinProtocol,
			"clientMaxProtocol":    p.MaxProtocol,
			"expectedProtocol":     wire.MaxProtocol,
			"minimumProbeProtocol": wire.MinProtocol,
		})
		return &handshakeError{e, websocket.StatusProtocolError}
	}
	role := p.Role
	if role == "" {
		role = wire.RoleOperator
	}
	if role != wire.RoleOperator {
		return &handshakeError{wire.NewError(wire.CodeInvalidRequest, "unsupported role: "+role+" (this gateway serves operator clients only)"), websocket.StatusPolicyViolation}
	}
	method, herr := c.authenticate(p)
	if herr != nil {
		return herr
	}

	var scopes []string
	for _, sc := range p.Scopes {
		if sc = strings.TrimSpace(sc); sc != "" && !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	if scopes == nil {
		scopes = []string{}
	}
	c.protocol, c.role, c.scopes = proto, role, scopes
	c.client, c.connectedAt = p.Client, s.now()
	if p.Client.ID == wire.ClientIDControlUI && slices.Contains(p.Caps, wire.CapModelCatalogSnapshot) {
		c.catalogTarget = p.ModelCatalog
	}

	now := s.now()
	conf := s.conf
	modelRef := conf.Agent(s.defaultAgent).Model
	if modelRef == "" && s.cfg.DefaultModelRef != nil {
		modelRef = s.cfg.DefaultModelRef(s.defaultAgent)
	}
	hello := wire.HelloOK{
		Type:     wire.HelloOKType,
		Protocol: proto,
		Server:   wire.ServerInfo{Version: s.cfg.Version, ConnID: c.id},
		Features: wire.Features{Methods: s.Methods(), Events: s.Events(), Capabilities: []string{wire.CapPublishedModelCatalog}},
		Snapshot: wire.Snapshot{
			Presence:     s.presenceSnapshot(),
			Health:       s.health(),
			StateVersion: wire.StateVersion{Presence: s.presenceVersion.Load()},
			UptimeMs:     now.Sub(s.started).Milliseconds(),
			AuthMode:     conf.Auth.Mode,
			SessionDefaults: &wire.SessionDefaults{
				DefaultAgentID:    s.defaultAgent,
				ModelConfigured:   modelRef != "",
				Ownership:         "sole",
				SelectionRequired: false,
				MainKey:           s.alias.MainKey,
				MainSessionKey:    sessionkey.MainKey(s.defaultAgent, s.alias.MainKey),
				Scope:             s.alias.Scope,
			},
		},
		Auth: wire.HelloAuth{Method: method, Role: role, Scopes: scopes},
		Policy: wire.HelloPolicy{
			MaxPayload:       s.cfg.MaxPayload,
			MaxBufferedBytes: s.cfg.MaxBufferedBytes,
			TickIntervalMs:   s.cfg.TickInterval.Milliseconds(),
			Attachments:      attachmentPolicy(),
		},
	}
	b, err := json.Marshal(hello)
	if err != nil {
		return &handshakeError{wire.NewError(wire.CodeUnavailable, "internal error"), websocket.StatusInternalError}
	}
	frame := wire.AppendResponse(nil, f.ID, b)
	c.mu.Lock()
	ok = c.enqueueLocked(outFrame{raw: frame}, false)
	if ok {
		c.ready = true
		c.scoped = scopedCaps(p.Caps) // read by broadcasts under c.mu
		c.approvals = approvalClient(role, scopes, p.Caps, p.Client.ID)
		if !c.scoped {
			s.addPlain(c) // with ready, under c.mu (subIndex's lock order)
		}
	}
	c.mu.Unlock()
	c.signal()
	if ok {
		if !ephemeralClient(p.Client.Mode) {
			s.broadcastPresence() // the new client is in the list
		}
		c.log.Info("client connected", "client", p.Client.ID, "mode", p.Client.Mode, "version", p.Client.Version,
			"protocol", proto, "role", role, "scopes", scopes, "auth", method)
	}
	return nil
}

// negotiate picks the highest protocol both sides speak.
func negotiate(clientMin, clientMax int) (int, bool) {
	if clientMin > clientMax || clientMax < wire.MinProtocol || clientMin > wire.MaxProtocol {
		return 0, false
	}
	return min(clientMax, wire.MaxProtocol), true
}

// authenticate checks the shared secret of config gateway.auth and returns
// the auth method. The device block is accepted and ignored: device
// signatures are not verified, so a device alone never authenticates.
func (c *conn) authenticate(p *wire.ConnectParams) (string, *handshakeError) {
	auth := c.s.conf.Auth
	var given []string
	if p.Auth != nil {
		for _, v := range []string{p.Auth.Token, p.Auth.Password} {
			if v != "" {
				given = append(given, v)
			}
		}
	}
	switch auth.Mode {
	case settings.AuthNone:
		if !isLoopback(c.local) {
			return "", &handshakeError{wire.NewError(wire.CodeInvalidRequest, msgAuthNoneRemote).WithDetails(map[string]any{
				"code": wire.DetailAuthModeUnsupported,
			}), websocket.StatusPolicyViolation}
		}
		return settings.AuthNone, nil
	case settings.AuthToken, settings.AuthPassword:
	default:
		return "", &handshakeError{wire.NewError(wire.CodeInvalidRequest, msgAuthUnsupported).WithDetails(map[string]any{
			"code": wire.DetailAuthModeUnsupported,
		}), websocket.StatusPolicyViolation}
	}
	secret := auth.Token
	msg, detail, reason := msgTokenMismatch, wire.DetailAuthTokenMismatch, "token_mismatch"
	if auth.Mode == settings.AuthPassword {
		secret = auth.Password
		msg, detail, reason = msgPasswordMismatch, wire.DetailAuthPasswordMismatch, "password_mismatch"
	}
	if len(given) == 0 {
		if p.Device == nil {
			return "", &handshakeError{wire.NewError(wire.CodeNotPaired, msgDeviceRequired).WithDetails(map[string]any{
				"code": wire.DetailDeviceIdentityRequired,
			}), websocket.StatusPolicyViolation}
		}
		return "", &handshakeError{wire.NewError(wire.CodeNotPaired, msgPairingRequired).WithDetails(map[string]any{
			"code": wire.DetailPairingRequired,
		}), websocket.StatusPolicyViolation}
	}
	key := c.s.authLimit.key(c.remote, c.origin)
	if left, locked := c.s.authLimit.blocked(key); locked {
		return "", rateLimited(left)
	}
	matched := 0
	for _, g := range given {
		// An empty configured secret never matches.
		if secret != "" && subtle.ConstantTimeCompare([]byte(g), []byte(secret)) == 1 {
			matched = 1
		}
	}
	if matched == 0 {
		if c.s.authLimit.fail(key) {
			return "", rateLimited(c.s.authLimit.cfg.Lockout)
		}
		return "", &handshakeError{wire.NewError(wire.CodeInvalidRequest, msg).WithDetails(map[string]any{
			"code":                    detail,
			"authReason":              reason,
			"canRetryWithDeviceToken": false,
			"recommendedNextStep":     "update_auth_credentials",
		}), websocket.StatusPolicyViolation}
	}
	c.s.authLimit.succeed(key)
	return auth.Mode, nil
}

// rateLimited is the reference's answer to a client locked out after too
// many wrong secrets.
func rateLimited(left time.Duration) *handshakeError {
	return &handshakeError{wire.NewError(wire.CodeInvalidRequest, msgAuthRateLimited).WithRetry(max(left.Milliseconds(), 1)).WithDetails(map[string]any{
		"code":                wire.DetailAuthRateLimited,
		"authReason":          "rate_limited",
		"recommendedNextStep": "wait_then_retry",
	}), websocket.StatusPolicyViolation}
}

// isLoopback reports whether the listener address is a loopback address.
func isLoopback(a net.Addr) bool {
	if a == nil {
		return false
	}
	host := a.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
