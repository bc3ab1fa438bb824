// Package cli owns the switchboard command line: the cobra command tree, flag
// parsing and output formatting. Client subcommands talk to a running gateway;
// "serve" hands off to the daemon through Options.Serve, so this package never
// imports the daemon. Only cmd/switchboard imports it.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/settings"
)

// Version is the Switchboard version, set at build time with
// -ldflags "-X github.com/switchboardhq/switchboard/internal/cli.Version=...".
var Version = "0.1.0-dev"

// Commit is the source revision, set at build time with
// -ldflags "-X github.com/switchboardhq/switchboard/internal/cli.Commit=...".
// When it is empty, the revision Go stamped into the binary is used.
var Commit = ""

// VersionString is Version followed by the commit (and "dirty" for a build
// from a modified tree) when it is known, e.g. "1.2.0 (commit 3f2a9c1)".
func VersionString() string { return versionString(Version, Commit, debug.ReadBuildInfo) }

func versionString(version, commit string, info func() (*debug.BuildInfo, bool)) string {
	dirty := false
	if commit == "" {
		if bi, ok := info(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
		}
	}
	if commit == "" {
		return version
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if dirty {
		commit += ", dirty"
	}
	return version + " (commit " + commit + ")"
}

// ServeOptions are the "serve" flags handed to Options.Serve.
type ServeOptions struct {
	ConfigPath string
	// Port is nil when --port was not given.
	Port *int
	Bind string
	// LogLevel and LogFormat are --log-level and --log-format ("" when
	// not given).
	LogLevel, LogFormat string
}

// Options wires the commands to their implementations.
type Options struct {
	// Serve runs the gateway until ctx ends.
	Serve func(ctx context.Context, o ServeOptions) error
	// IsTerminal reports whether a writer is a terminal (progress lines go
	// to stderr only then); nil means checking the file descriptor.
	IsTerminal func(w io.Writer) bool
	// Executable returns the path of the switchboard binary (for service
	// definitions); nil means os.Executable.
	Executable func() (string, error)
	// Doctor runs the local checks of "switchboard doctor".
	Doctor func(ctx context.Context, o DoctorOptions) []DoctorCheck
	// Migrate copies the SQLite state into PostgreSQL ("switchboard
	// migrate"); the result may have tables along with an error.
	Migrate func(ctx context.Context, o MigrateOptions) (MigrateResult, error)
	// Stdin, Stdout and Stderr default to the process streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Env looks up SWITCHBOARD_URL, SWITCHBOARD_GATEWAY_TOKEN and
	// SWITCHBOARD_GATEWAY_PASSWORD; nil means the process environment.
	Env settings.Env
}

// Run parses args and runs the chosen command.
func Run(ctx context.Context, args []string, opts Options) error {
	root := newRoot(opts)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

func newRoot(opts Options) *cobra.Command {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Env == nil {
		opts.Env = settings.OSEnv
	}
	root := &cobra.Command{
		Use:           "switchboard",
		Short:         "Self-hosted AI agent gateway whose agents list, read, message and spawn each other's sessions",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       VersionString(),
	}
	root.SetVersionTemplate("switchboard {{.Version}}\n")
	root.SetIn(opts.Stdin)
	root.SetOut(opts.Stdout)
	root.SetErr(opts.Stderr)
	if opts.IsTerminal == nil {
		opts.IsTerminal = isTerminal
	}
	g := &globalFlags{env: opts.Env, isTerminal: opts.IsTerminal}
	g.register(root)
	root.AddCommand(
		newServeCmd(opts),
		newDoctorCmd(opts, g),
		newMigrateCmd(opts, g),
		newServiceCmd(opts),
		newLogsCmd(g),
		newVersionCmd(),
		newStatusCmd(g),
		newCallCmd(g),
		newSessionsCmd(g),
		newAgentsCmd(g),
		newSubagentsCmd(g),
		newAnnouncesCmd(g),
		newApprovalsCmd(g),
		newMCPCmd(g),
		newDashboardCmd(g),
		newSandboxCmd(opts),
		newCronCmd(g),
		newChannelsCmd(g),
		newTopCmd(g),
		newMemoryCmd(g),
		newSkillsCmd(g),
	)
	for _, c := range root.Commands() {
		rejectUnknownSubcommands(c)
	}
	return root
}

// rejectUnknownSubcommands makes every command group under c (a command
// with subcommands and no action of its own) fail on an argument that names
// no subcommand, with cobra's suggestions, instead of printing its help and
// succeeding. Cobra checks this only for the root command. The group alone
// still prints its help.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return unknownSubcommand(cmd, args[0])
	}
}

// unknownSubcommand is the error for "switchboard <group> <name>" when the
// group has no subcommand name.
func unknownSubcommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if sugg := cmd.SuggestionsFor(name); len(sugg) > 0 {
		msg += "\n\nDid you mean this?"
		for _, s := range sugg {
			msg += "\n\t" + s
		}
	}
	return fmt.Errorf("%s\nRun '%s --help' for usage", msg, cmd.CommandPath())
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "switchboard", VersionString())
			return err
		},
	}
}
