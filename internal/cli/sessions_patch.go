package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newSessionsPatchCmd(g *globalFlags) *cobra.Command {
	var (
		label, model, thinking, policy string
		clearLabel, create             bool
	)
	cmd := &cobra.Command{
		Use:   "patch KEY",
		Short: "Change a session's label, model, thinking level or send policy",
		Long: `Patch changes the given settings of session KEY. A KEY that names no
session is an error ("no such session") unless --create is given, which
creates the session entry first. An empty --model or --thinking clears the
override; --send-policy inherit clears the session's own policy.`,
		Example: `  switchboard sessions patch main --label triage --model openai/gpt-4.1
  switchboard sessions patch agent:main:work --send-policy deny --create`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			p := wire.SessionsPatchParams{Key: args[0]}
			switch {
			case clearLabel:
				p.Label = wire.Null[string]()
			case f.Changed("label"):
				p.Label = wire.Of(label)
			}
			if f.Changed("model") {
				p.Model = orNull(model)
			}
			if f.Changed("thinking") {
				p.ThinkingLevel = orNull(thinking)
			}
			if f.Changed("send-policy") {
				switch strings.ToLower(strings.TrimSpace(policy)) {
				case "allow", "deny":
					p.SendPolicy = wire.Of[any](strings.ToLower(strings.TrimSpace(policy)))
				case "inherit":
					p.SendPolicy = wire.Null[any]()
				default:
					return fmt.Errorf("--send-policy must be allow, deny or inherit, not %q", policy)
				}
			}
			if !p.Label.Set && !p.Model.Set && !p.ThinkingLevel.Set && !p.SendPolicy.Set {
				return errors.New("nothing to change: give --label, --clear-label, --model, --thinking or --send-policy")
			}
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				if !create {
					if err := g.requireSession(ctx, c, args[0]); err != nil {
						return err
					}
				}
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsPatch, p)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SessionsPatchResult
				if err := decodeResult(wire.MethodSessionsPatch, raw, &res); err != nil {
					return err
				}
				e := res.Entry
				_, err = fmt.Fprintf(out, "Patched %s: label=%s model=%s thinking=%s sendPolicy=%s\n",
					res.Key, orDash(e.Label), orDash(e.Model), orDash(e.ThinkingLevel), orInherit(e.SendPolicy))
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&label, "label", "", "set the session's label")
	f.BoolVar(&clearLabel, "clear-label", false, "remove the session's label")
	f.BoolVar(&create, "create", false, "create the session when it does not exist yet")
	f.StringVar(&model, "model", "", `override the model ("<provider>/<model>"; "" clears)`)
	f.StringVar(&thinking, "thinking", "", `thinking level: off, minimal, low, medium, high, xhigh or adaptive ("" clears)`)
	f.StringVar(&policy, "send-policy", "", "allow, deny or inherit")
	cmd.MarkFlagsMutuallyExclusive("label", "clear-label")
	return cmd
}

// orNull is a set Nullable of s, or null when s is blank.
func orNull(s string) wire.Nullable[string] {
	if strings.TrimSpace(s) == "" {
		return wire.Null[string]()
	}
	return wire.Of(s)
}

func orInherit(s string) string {
	if s == "" {
		return "inherit"
	}
	return s
}
