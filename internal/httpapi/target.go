package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
)

// Reference texts of target resolution.
const (
	msgInvalidModel       = "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`."
	msgReservedSessionKey = "`x-openclaw-session-key` cannot use reserved internal session namespaces."
)

// Model ids the endpoints list and accept. "openclaw" and
// "openclaw/default" target the default agent; "switchboard" and
// "switchboard/<agentId>" are accepted aliases.
const (
	modelOpenClaw        = "openclaw"
	modelOpenClawDefault = "openclaw/default"
)

func agentModelRE() *regexp.Regexp { return agentModelREValue.Get() }

// agentModelREValue is built on the first call of agentModelRE.
var agentModelREValue = lazy.Value[*regexp.Regexp]{New: buildAgentModelRE}

// buildAgentModelRE builds agentModelRE's value.
func buildAgentModelRE() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:openclaw|switchboard)[:/]([a-z0-9][a-z0-9_-]{0,63})$|^agent:([a-z0-9][a-z0-9_-]{0,63})$`)
}

// isAgentModelID reports whether model is an agent-target model id.
func isAgentModelID(model string) bool {
	m := strings.ToLower(strings.TrimSpace(model))
	switch m {
	case "":
		return false
	case modelOpenClaw, modelOpenClawDefault, "switchboard", "switchboard/default":
		return true
	}
	return agentModelRE().MatchString(m)
}

// agentFromModel returns the agent a model id targets ("" when it names
// none): the default agent for the bare and /default ids.
func agentFromModel(model, defaultAgent string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	switch m {
	case "":
		return ""
	case modelOpenClaw, modelOpenClawDefault, "switchboard", "switchboard/default":
		return defaultAgent
	}
	sm := agentModelRE().FindStringSubmatch(m)
	if sm == nil {
		return ""
	}
	return sessionkey.NormalizeAgentID(sm[1] + sm[2])
}

// agentIDs returns the configured agents (the default agent when none is
// listed), normalised.
func (s *Server) agentIDs() []string {
	ids := s.conf.AgentIDs()
	def := s.conf.DefaultAgent
	if !slices.Contains(ids, def) {
		ids = append([]string{def}, ids...)
	}
	return ids
}

// target is where a chat or response request runs.
type target struct {
	AgentID    string
	SessionKey string
	Channel    string
}

// targetError is a request error with the reference's 400 text.
type targetError struct{ msg string }

func (e *targetError) Error() string { return e.msg }

// resolveAgent picks the agent of a request: x-openclaw-agent-id (or
// x-openclaw-agent), then the model id, then the default agent, as the
// reference's resolveAgentIdForRequest does.
func (s *Server) resolveAgent(r *http.Request, model string) (string, error) {
	if strings.TrimSpace(model) != "" && !isAgentModelID(model) {
		return "", &targetError{msgInvalidModel}
	}
	known := s.agentIDs()
	raw := strings.TrimSpace(r.Header.Get("X-Openclaw-Agent-Id"))
	if raw == "" {
		raw = strings.TrimSpace(r.Header.Get("X-Openclaw-Agent"))
	}
	if raw != "" {
		if !sessionkey.IsValidAgentID(raw) {
			return "", &targetError{fmt.Sprintf("Unknown agent '%s'.", raw)}
		}
		id := sessionkey.NormalizeAgentID(raw)
		if !slices.Contains(known, id) {
			return "", &targetError{fmt.Sprintf("Unknown agent '%s'.", id)}
		}
		return id, nil
	}
	def := s.conf.DefaultAgent
	if id := agentFromModel(model, def); id != "" {
		if !slices.Contains(known, id) {
			return "", &targetError{fmt.Sprintf("Unknown agent '%s'.", id)}
		}
		return id, nil
	}
	return def, nil
}

// reservedOverride reports whether an explicit session key uses one of
// the internal namespaces the reference refuses (sub-agent, cron, ACP).
func reservedOverride(key string) bool {
	l := strings.ToLower(key)
	return strings.HasPrefix(l, "subagent:") || strings.HasPrefix(l, "cron:") || strings.HasPrefix(l, "acp:") ||
		sessionkey.IsSubagent(l) || sessionkey.IsCron(l) || sessionkey.IsACP(l)
}

// resolveTarget resolves the agent and session of a chat or response
// request: x-openclaw-session-key when given, else a session derived from
// the OpenAI user ("agent:<id>:<prefix>-user:<user>"), else a new session
// per request ("agent:<id>:<prefix>:<uuid>").
func (s *Server) resolveTarget(r *http.Request, model, user, prefix string) (target, error) {
	agentID, err := s.resolveAgent(r, model)
	if err != nil {
		return target{}, err
	}
	t := target{AgentID: agentID, Channel: sessionkey.InternalChannel}
	if c := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Openclaw-Message-Channel"))); c != "" {
		t.Channel = c
	}
	if explicit := strings.TrimSpace(r.Header.Get("X-Openclaw-Session-Key")); explicit != "" {
		if reservedOverride(explicit) {
			return target{}, &targetError{msgReservedSessionKey}
		}
		t.SessionKey = sessionkey.ToStoreKey(agentID, explicit, s.conf.MainKey)
		if a := sessionkey.AgentID(t.SessionKey); !slices.Contains(s.agentIDs(), a) {
			return target{}, &targetError{fmt.Sprintf("Unknown agent '%s'.", a)}
		}
		t.AgentID = sessionkey.AgentID(t.SessionKey)
		return t, nil
	}
	if u := strings.TrimSpace(user); u != "" {
		t.SessionKey = sessionkey.MainKey(agentID, prefix+"-user:"+u)
	} else {
		t.SessionKey = sessionkey.MainKey(agentID, prefix+":"+s.newID())
	}
	return t, nil
}
