package gateway

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/subagent"
)

// optionCommand answers /model, /models and /think without a model turn:
// the session's model and thinking level, shown or chosen for this
// session only (the configured defaults live in the config file). The
// reply is recorded in the session (which admission made sure exists)
// under the command's run id.
func (s *Server) optionCommand(ctx context.Context, cmd admission.Command) (string, error) {
	var reply string
	var err error
	switch cmd.Session.Kind {
	case compaction.CmdModel:
		reply, err = s.modelCommand(ctx, cmd)
	case compaction.CmdModels:
		reply = modelsText(s.catalog(), cmd.Session.Rest)
	case compaction.CmdThink:
		reply, err = s.thinkCommand(ctx, cmd)
	default:
		return "", fmt.Errorf("gateway: not an option command: %q", cmd.Session.Kind)
	}
	if err != nil {
		return "", err
	}
	if err := s.Reply(ctx, cmd.SessionKey, cmd.RunID, reply); err != nil {
		return "", err
	}
	return reply, nil
}

// catalog is the configured models (none without a Catalog).
func (s *Server) catalog() []CatalogModel {
	if s.cfg.Catalog == nil {
		return nil
	}
	return s.cfg.Catalog()
}

// modelCommand shows or changes the session's model.
func (s *Server) modelCommand(ctx context.Context, cmd admission.Command) (string, error) {
	args, usage := parseModelArgs(cmd.Session.Rest)
	if usage != "" {
		return usage, nil
	}
	switch {
	case args.Wider:
		return "Only this session's model can be chosen from chat: /model <provider/model>. " +
			"The agent's and the global default are set in the config file (agents.list[].model, agents.defaults.model).", nil
	case args.List:
		return modelsText(s.catalog(), args.Provider), nil
	case args.Reset:
		if err := s.setSessionOption(ctx, cmd.SessionKey, func(sess *store.Session) { sess.Model = "" }); err != nil {
			return "", err
		}
		label, _ := s.modelLabel(cmd.AgentID, "")
		return fmt.Sprintf("Session model reset to configured default (%s).", label), nil
	case args.Ref != "":
		label, err := s.modelLabel(cmd.AgentID, args.Ref)
		if err != nil {
			return fmt.Sprintf("Unrecognized model %q. Use /models to list providers, or /models <provider> to list models.\n(%v)", args.Ref, err), nil
		}
		if err := s.setSessionOption(ctx, cmd.SessionKey, func(sess *store.Session) { sess.Model = label }); err != nil {
			return "", err
		}
		return fmt.Sprintf("Model set to %s for this session only; configured default unchanged.", label), nil
	}
	sess, err := s.cfg.Store.GetSession(ctx, cmd.SessionKey)
	if err != nil {
		return "", fmt.Errorf("gateway: /model: %w", err)
	}
	current, err := s.modelLabel(cmd.AgentID, sess.Model)
	if err != nil {
		current = cmp.Or(sess.Model, "the agent's default") + " (⚠️ " + err.Error() + ")"
	}
	def, err := s.modelLabel(cmd.AgentID, "")
	if err != nil {
		def = "⚠️ " + err.Error()
	}
	return strings.Join([]string{
		"Current: " + current,
		"Default: " + def,
		"Think: " + cmp.Or(sess.ThinkingLevel, "default") + " (change with /think <level>)",
		"",
		"Session: /model <provider/model>",
		"Back to the default: /model default",
		"Browse: /models (providers) or /models <provider> (models)",
	}, "\n"), nil
}

// modelLabel resolves ref ("" for the agent's default) to the
// "<provider>/<model>" the session stores. Without a resolver the ref is
// taken as it is.
func (s *Server) modelLabel(agentID, ref string) (string, error) {
	if s.cfg.Models == nil {
		return cmp.Or(ref, "the agent's default"), nil
	}
	m, err := s.cfg.Models.ResolveModel(agentID, ref)
	if err != nil {
		return "", err
	}
	return m.ProviderID + "/" + m.ModelID, nil
}

// setSessionOption changes the session's row with fn and tells the
// session lists.
func (s *Server) setSessionOption(ctx context.Context, key string, fn func(*store.Session)) error {
	sess, err := s.cfg.Store.UpdateSession(ctx, key, false, func(sess *store.Session) error {
		fn(sess)
		sess.UpdatedAt = s.now()
		return nil
	})
	if err != nil {
		return fmt.Errorf("gateway: update session: %w", err)
	}
	s.sessionsChanged(sess.Key, "patch", "")
	return nil
}

// thinkCommand shows or changes the session's thinking level.
func (s *Server) thinkCommand(ctx context.Context, cmd admission.Command) (string, error) {
	sess, err := s.cfg.Store.GetSession(ctx, cmd.SessionKey)
	if err != nil {
		return "", fmt.Errorf("gateway: /think: %w", err)
	}
	level, set, reply := thinkChoice(sess.ThinkingLevel, cmd.Session.Rest)
	if set {
		if err := s.setSessionOption(ctx, cmd.SessionKey, func(sess *store.Session) { sess.ThinkingLevel = level }); err != nil {
			return "", err
		}
	}
	return reply, nil
}

// thinkChoice is what "/think <arg>" does to a session whose level is
// cur ("" the default): set reports whether level is to be stored, and
// reply is the answer (the reference's wording).
func thinkChoice(cur, arg string) (level string, set bool, reply string) {
	arg = strings.TrimSpace(arg)
	options := "default, " + subagent.ThinkingLevelsHint
	switch {
	case arg == "":
		return "", false, fmt.Sprintf("Current thinking level: %s.\nOptions: %s.", cmp.Or(cur, "default"), options)
	case isDefaultWord(arg):
		return "", true, "Thinking level reset to default."
	}
	level, err := subagent.NormalizeThinking(arg)
	if err != nil {
		return "", false, fmt.Sprintf("Unrecognized thinking level %q. Valid levels: %s.", arg, options)
	}
	if level == "off" {
		return level, true, "Thinking disabled."
	}
	return level, true, fmt.Sprintf("Thinking level set to %s.", level)
}

// isDefaultWord reports whether a /model or /think argument clears the
// session's choice (the reference's words for it).
func isDefaultWord(s string) bool {
	switch strings.ToLower(s) {
	case "default", "inherit", "inherited", "clear", "reset", "unpin":
		return true
	}
	return false
}

// modelArgs is what follows /model.
type modelArgs struct {
	Ref      string // the model to choose ("": show)
	Reset    bool   // back to the configured default
	List     bool   // "list [provider]", as /models
	Provider string // with List
	Wider    bool   // -a/--agent or -g/--global: not from chat
}

// parseModelArgs reads "/model [ref|default|list [provider]|status]
// [-s|--session|-a|--agent|-g|--global]"; usage, when not "", is the
// reply to arguments it cannot read.
func parseModelArgs(rest string) (a modelArgs, usage string) {
	var words []string
	for _, w := range strings.Fields(rest) {
		switch strings.ToLower(w) {
		case "-s", "--session":
		case "-a", "--agent", "-g", "--global":
			a.Wider = true
		default:
			if strings.HasPrefix(w, "-") {
				return modelArgs{}, fmt.Sprintf("Unknown option %q. Usage: /model <provider/model> [-s]", w)
			}
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return a, ""
	}
	switch first := strings.ToLower(words[0]); {
	case first == "list":
		if len(words) > 2 {
			return modelArgs{}, "Usage: /model list [provider]"
		}
		a.List = true
		if len(words) == 2 {
			a.Provider = words[1]
		}
		return a, ""
	case len(words) > 1:
		return modelArgs{}, "Usage: /model <provider/model> [-s]"
	case first == "status":
	case isDefaultWord(first):
		a.Reset = true
	default:
		a.Ref = words[0]
	}
	return a, ""
}

// modelsText is the /models answer: the providers with their model
// counts, or one provider's models ("list" before it is allowed, as the
// reference's "/models list <provider>").
func modelsText(models []CatalogModel, arg string) string {
	words := strings.Fields(arg)
	if len(words) > 0 && strings.EqualFold(words[0], "list") {
		words = words[1:]
	}
	if len(models) == 0 {
		return "No models available."
	}
	byProvider := map[string][]CatalogModel{}
	for _, m := range models {
		byProvider[m.Provider] = append(byProvider[m.Provider], m)
	}
	providers := make([]string, 0, len(byProvider))
	for p := range byProvider {
		providers = append(providers, p)
	}
	slices.Sort(providers)
	if len(words) == 0 {
		lines := []string{"Providers:"}
		for _, p := range providers {
			lines = append(lines, fmt.Sprintf("- %s (%d)", p, len(byProvider[p])))
		}
		return strings.Join(append(lines, "", "Use: /models <provider>", "Switch: /model <provider/model>"), "\n")
	}
	p := words[0]
	ms, ok := byProvider[p]
	if !ok {
		lines := []string{"Unknown provider: " + p, "", "Available providers:"}
		for _, p := range providers {
			lines = append(lines, "- "+p)
		}
		return strings.Join(append(lines, "", "Use: /models <provider>"), "\n")
	}
	slices.SortFunc(ms, func(a, b CatalogModel) int { return strings.Compare(a.ID, b.ID) })
	lines := []string{fmt.Sprintf("Models (%s) — %d", p, len(ms))}
	for _, m := range ms {
		line := "- " + p + "/" + m.ID
		if m.Name != "" && m.Name != m.ID {
			line += " (" + m.Name + ")"
		}
		if m.Default {
			line += " · default"
		}
		if !m.Available {
			line += " · unavailable: " + cmp.Or(m.UnavailableReason, "unknown")
		}
		lines = append(lines, line)
	}
	return strings.Join(append(lines, "", "Switch: /model <provider/model>"), "\n")
}
