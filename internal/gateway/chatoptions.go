package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
)

// modelCommand answers /model and /models without a model turn: the
// session's model, shown or chosen for this session only (the configured
// defaults live in the config file). The reply is recorded in the session
// (which admission made sure exists) under the command's run id; text
// after "/model <ref>" then runs as the turn, on the model chosen.
func (s *Server) modelCommand(ctx context.Context, cmd admission.Command) (admission.Answer, error) {
	var ans admission.Answer
	var err error
	if cmd.Session.Kind == compaction.CmdModels {
		ans.Reply = modelsText(s.catalog(), cmd.Session.Rest)
	} else {
		ans, err = s.chooseModel(ctx, cmd)
		if err != nil {
			return admission.Answer{}, err
		}
	}
	if err := s.Reply(ctx, cmd.SessionKey, cmd.RunID, ans.Reply); err != nil {
		return admission.Answer{}, err
	}
	return ans, nil
}

// chooseModel shows or changes the session's model.
func (s *Server) chooseModel(ctx context.Context, cmd admission.Command) (admission.Answer, error) {
	args, usage := parseModelArgs(cmd.Session.Rest)
	if usage != "" {
		return admission.Answer{Reply: usage}, nil
	}
	switch {
	case args.Wider:
		return admission.Answer{Reply: "Only this session's model can be chosen from chat: /model <provider/model>. " +
			"The agent's and the global default are set in the config file (agents.list[].model, agents.defaults.model)."}, nil
	case args.List:
		return admission.Answer{Reply: modelsText(s.catalog(), args.Provider)}, nil
	case args.Reset:
		if err := s.setSessionOption(ctx, cmd.SessionKey, func(sess *store.Session) { sess.Model = "" }); err != nil {
			return admission.Answer{}, err
		}
		label, err := s.modelLabel(cmd.AgentID, "")
		if err != nil {
			label = "⚠️ " + err.Error()
		}
		return admission.Answer{Reply: fmt.Sprintf("Session model reset to configured default (%s).", label), Next: args.Text}, nil
	case args.Ref != "":
		label, err := s.modelLabel(cmd.AgentID, args.Ref)
		if err != nil {
			return admission.Answer{Reply: fmt.Sprintf("Unrecognized model %q. Use /models to list providers, or /models <provider> to list models.\n(%v)",
				args.Ref, err)}, nil
		}
		if err := s.setSessionOption(ctx, cmd.SessionKey, func(sess *store.Session) { sess.Model = label }); err != nil {
			return admission.Answer{}, err
		}
		return admission.Answer{Reply: fmt.Sprintf("Model set to %s for this session only; configured default unchanged.", label), Next: args.Text}, nil
	}
	sess, err := s.cfg.Store.GetSession(ctx, cmd.SessionKey)
	if err != nil {
		return admission.Answer{}, fmt.Errorf("gateway: /model: %w", err)
	}
	current, err := s.modelLabel(cmd.AgentID, sess.Model)
	if err != nil {
		current = cmp.Or(sess.Model, "the agent's default") + " (⚠️ " + err.Error() + ")"
	}
	def, err := s.modelLabel(cmd.AgentID, "")
	if err != nil {
		def = "⚠️ " + err.Error()
	}
	return admission.Answer{Reply: strings.Join([]string{
		"Current: " + current,
		"Default: " + def,
		"Think: " + cmp.Or(sess.ThinkingLevel, "default") + " (change with /think <level>)",
		"",
		"Session: /model <provider/model>",
		"Back to the default: /model default",
		"Browse: /models (providers) or /models <provider> (models)",
	}, "\n")}, nil
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

// nameCommand answers /name: the session's name (its label, as
// sessions.patch sets it) shown, or set from the title after the command,
// with the reference's replies.
func (s *Server) nameCommand(ctx context.Context, cmd admission.Command) (string, error) {
	var reply string
	if title := cmd.Session.Rest; title == "" {
		sess, err := s.cfg.Store.GetSession(ctx, cmd.SessionKey)
		if err != nil {
			return "", fmt.Errorf("gateway: /name: %w", err)
		}
		reply = "This session has no custom name yet."
		if sess.Label != "" {
			reply = "Current session name: " + sess.Label
		}
		reply += "\nUse /name <title> to set a name (mirrors the session manager)."
	} else if label, werr := validLabel(title); werr != nil {
		reply = "Couldn't rename the session: " + werr.Message
	} else if unlock, err := s.claimLabel(ctx, cmd.SessionKey, s.defaultAgent, label); err != nil {
		var inUse *wire.Error
		if !errors.As(err, &inUse) {
			return "", err
		}
		reply = "Couldn't rename the session: " + inUse.Message
	} else {
		err := s.setSessionOption(ctx, cmd.SessionKey, func(sess *store.Session) { sess.Label = label })
		unlock()
		if err != nil {
			return "", err
		}
		reply = "✅ Session renamed to “" + label + "”."
	}
	if err := s.Reply(ctx, cmd.SessionKey, cmd.RunID, reply); err != nil {
		return "", err
	}
	return reply, nil
}

// modelArgs is what follows /model.
type modelArgs struct {
	Ref      string // the model to choose ("": show)
	Reset    bool   // back to the configured default
	List     bool   // "list [provider]", as /models
	Provider string // with List
	Wider    bool   // -a/--agent or -g/--global: not from chat
	// Text is what follows the model (and its options): a message that
	// runs once the model is chosen.
	Text string
}

// parseModelArgs reads "/model [ref|default [text]|list [provider]|status]
// [-s|--session|-a|--agent|-g|--global]"; usage, when not "", is the
// reply to arguments it cannot read.
func parseModelArgs(rest string) (a modelArgs, usage string) {
	word, rest := cutWord(rest)
	for isOption(word) {
		if usage := a.option(word); usage != "" {
			return modelArgs{}, usage
		}
		word, rest = cutWord(rest)
	}
	if word == "" {
		return a, ""
	}
	var next string
	for next, rest = cutWord(rest); isOption(next); next, rest = cutWord(rest) {
		if usage := a.option(next); usage != "" {
			return modelArgs{}, usage
		}
	}
	// next is the first word of the text after the model and its options.
	text := strings.TrimSpace(next + rest)
	switch first := strings.ToLower(word); {
	case first == "list":
		if strings.ContainsFunc(text, unicode.IsSpace) {
			return modelArgs{}, "Usage: /model list [provider]"
		}
		a.List, a.Provider = true, text
	case first == "status":
		if text != "" {
			return modelArgs{}, "Usage: /model status"
		}
	case policy.IsDefaultWord(first):
		a.Reset, a.Text = true, text
	default:
		a.Ref, a.Text = word, text
	}
	return a, ""
}

// cutWord splits s after its first word (blank-separated); the rest keeps
// its lines.
func cutWord(s string) (word, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// isOption reports whether a /model word is an option ("-s", "--agent").
func isOption(w string) bool { return len(w) > 1 && w[0] == '-' }

// option applies a /model option; the reply for one it does not know.
func (a *modelArgs) option(w string) (usage string) {
	switch strings.ToLower(w) {
	case "-s", "--session":
	case "-a", "--agent", "-g", "--global":
		a.Wider = true
	default:
		return fmt.Sprintf("Unknown option %q. Usage: /model <provider/model> [-s]", w)
	}
	return ""
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
