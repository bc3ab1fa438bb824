package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
)

func newSandboxCmd(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Inspect the sandbox of agents and sessions",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSandboxExplainCmd(opts))
	return cmd
}

func newSandboxExplainCmd(opts Options) *cobra.Command {
	var agentID, sessionKey string
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Print the effective sandbox (backend, mounts, network, limits, tools) of an agent or session",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			paths, err := settings.ResolvePaths(opts.Env)
			if err != nil {
				return fmt.Errorf("sandbox explain: %w", err)
			}
			set, _, err := settings.Load(paths.ConfigPath, opts.Env)
			if err != nil {
				return fmt.Errorf("sandbox explain: %w", err)
			}
			return explainSandbox(cmd.OutOrStdout(), set, agentID, sessionKey)
		},
	}
	cmd.Flags().StringVar(&agentID, "agent", "", "agent id (default: the session's agent, else the default agent)")
	cmd.Flags().StringVar(&sessionKey, "session", "", "session key (default: the agent's main session)")
	return cmd
}

// explainSandbox writes the sandbox that session key of agent id gets.
func explainSandbox(w io.Writer, set *settings.Settings, agentID, key string) error {
	if agentID == "" && key != "" {
		agentID = sessionkey.AgentID(key)
	}
	if agentID == "" {
		agentID = set.DefaultAgent
	}
	ag := set.Agent(agentID)
	main := sessionkey.MainKey(ag.ID, set.MainKey)
	if key == "" {
		key = main
	}
	fmt.Fprintf(w, "agent: %s\nsession: %s\nmode: %s\n", ag.ID, key, ag.SandboxMode)
	if !policy.ChildSandboxed(ag.SandboxMode, key, main) {
		fmt.Fprintf(w, "sandboxed: no (tools run on the gateway host)\n")
		return nil
	}
	fmt.Fprintf(w, "sandboxed: yes\n")
	spec := ag.SandboxSpec(key)
	_, err := io.WriteString(w, spec.Explain(ag.Workspace))
	fmt.Fprintf(w, "workspaceRoot: %s\n", ag.SandboxWorkspaceRoot)
	switch spec.Normalized().WorkspaceAccess {
	case sandbox.AccessNone:
		fmt.Fprintf(w, "file tools: read, write, edit, apply_patch, ls (confined to the sandbox workspace %s)\n", spec.ScopeDir)
	case sandbox.AccessRO:
		fmt.Fprintf(w, "file tools: read, ls (write, edit, apply_patch removed: read-only workspace)\n")
	default:
		fmt.Fprintf(w, "file tools: read, write, edit, apply_patch, ls (confined to the workspace)\n")
	}
	fmt.Fprintf(w, "sandbox tool policy: %s\n", describeSandboxTools(ag.SandboxTools))
	fmt.Fprintf(w, "elevated: %s\n", describeElevated(ag))
	return err
}

// describeSandboxTools summarises tools.sandbox.tools: each list as
// configured, or the reference's default.
func describeSandboxTools(p policy.SandboxToolPolicy) string {
	list := func(v, def []string) string {
		switch {
		case v == nil && def == nil:
			return "unset"
		case v == nil:
			return "default [" + strings.Join(def, " ") + "]"
		case len(v) == 0:
			return "[] (every tool)"
		}
		return "[" + strings.Join(v, " ") + "]"
	}
	return fmt.Sprintf("allow %s; alsoAllow %s; deny %s (tools.sandbox.tools, agents.list[].tools.sandbox.tools)",
		list(p.Allow, policy.DefaultSandboxToolAllow), list(p.AlsoAllow, nil), list(p.Deny, policy.DefaultSandboxToolDeny))
}

// describeElevated says whether exec {elevated: true} can leave the
// sandbox, and for whom.
func describeElevated(ag settings.Agent) string {
	if !ag.Elevated {
		return "off (tools.elevated.enabled or the agent's tools.elevated.enabled is false)"
	}
	if len(ag.ElevatedFrom) == 0 {
		return "nobody (tools.elevated.allowFrom.<channel> lists the senders allowed)"
	}
	var parts []string
	for _, ch := range slices.Sorted(maps.Keys(ag.ElevatedFrom)) {
		parts = append(parts, ch+": "+strings.Join(ag.ElevatedFrom[ch], " "))
	}
	s := "for " + strings.Join(parts, "; ")
	if ag.ElevatedFromOwn != nil {
		s += " (and on the agent's own tools.elevated.allowFrom)"
	}
	return s
}
