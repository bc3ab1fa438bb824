package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// DoctorCheck is one result line of "switchboard doctor".
type DoctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok", "warn" or "FAIL"
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorOptions are the "doctor" flags handed to Options.Doctor.
type DoctorOptions struct {
	ConfigPath string
	// Port is nil when --port was not given.
	Port *int
}

func newDoctorCmd(opts Options, g *globalFlags) *cobra.Command {
	var do DoctorOptions
	var port int
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the config, model providers, state dir, port, lock and store; print a fix for each problem",
		Long: "Checks what `switchboard serve` needs, one line per check, with the fix for each problem.\n" +
			"It changes nothing. Exits non-zero when a check fails (warnings do not).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Doctor == nil {
				return errors.New("doctor is not available in this build")
			}
			if cmd.Flags().Changed("port") {
				if port < 0 || port > 65535 {
					return errors.New("--port must be 0..65535")
				}
				do.Port = &port
			}
			checks := opts.Doctor(cmd.Context(), do)
			failed := 0
			for _, c := range checks {
				if c.Status == "FAIL" {
					failed++
				}
			}
			if g.json {
				if err := writeJSON(cmd.OutOrStdout(), map[string]any{"ok": failed == 0, "checks": checks}); err != nil {
					return err
				}
			} else if err := printDoctorChecks(cmd.OutOrStdout(), checks); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("doctor: %d check(s) failed", failed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&do.ConfigPath, "config", "", "config file (default $SWITCHBOARD_CONFIG or <state dir>/switchboard.json5)")
	cmd.Flags().IntVar(&port, "port", 0, "the port serve would be given (default gateway.port or 18789)")
	return cmd
}

// printDoctorChecks prints one line per check, status, name and detail in
// columns, with the fix under a check that is not ok. A detail or fix of
// several lines (a config with several errors) keeps each line in the
// detail column.
func printDoctorChecks(w io.Writer, checks []DoctorCheck) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		for i, line := range strings.Split(c.Detail, "\n") {
			if i == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, line)
			} else {
				fmt.Fprintf(tw, "\t\t%s\n", line)
			}
		}
		if c.Fix != "" && c.Status != "ok" {
			for i, line := range strings.Split(c.Fix, "\n") {
				if i == 0 {
					line = "fix: " + line
				} else {
					line = "     " + line
				}
				fmt.Fprintf(tw, "\t\t%s\n", line)
			}
		}
	}
	return tw.Flush()
}
