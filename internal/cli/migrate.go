package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// MigrateOptions are the "migrate" flags handed to Options.Migrate.
type MigrateOptions struct {
	ConfigPath string
	// From is the SQLite file; "" means <state dir>/switchboard.db.
	From string
	// To is the PostgreSQL URL; "" means storage.url or
	// SWITCHBOARD_DATABASE_URL.
	To string
}

// MigrateTable is one table's line of the migrate report.
type MigrateTable struct {
	Table      string `json:"table"`
	SourceRows int64  `json:"sourceRows"`
	DestRows   int64  `json:"destRows"`
	Inserted   int64  `json:"inserted"`
	Updated    int64  `json:"updated"`
	SourceSum  string `json:"sourceSha256"`
	DestSum    string `json:"destSha256"`
	Match      bool   `json:"match"`
}

// MigrateResult is what Options.Migrate reports: where from, where to
// (without secrets) and each table's verification.
type MigrateResult struct {
	From   string         `json:"from"`
	To     string         `json:"to"`
	Tables []MigrateTable `json:"tables"`
}

func newMigrateCmd(opts Options, g *globalFlags) *cobra.Command {
	var mo MigrateOptions
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Copy the SQLite state (sessions, transcripts, runs, outbox) into PostgreSQL and verify it",
		Long: "Copies the state dir's SQLite database into PostgreSQL (--to, else storage.url or\n" +
			"SWITCHBOARD_DATABASE_URL), creating the schema, then compares every table by row count\n" +
			"and SHA-256 checksum. Safe to re-run: rows are written by key, so a second run changes\n" +
			"nothing and a later one copies what changed. Stop the gateway first. Exits non-zero when\n" +
			"a table does not match.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Migrate == nil {
				return errors.New("migrate is not available in this build")
			}
			res, err := opts.Migrate(cmd.Context(), mo)
			if len(res.Tables) == 0 {
				return err
			}
			if g.json {
				if werr := writeJSON(cmd.OutOrStdout(), map[string]any{"ok": err == nil, "from": res.From, "to": res.To, "tables": res.Tables}); werr != nil {
					return werr
				}
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "from %s\nto   %s\n", res.From, res.To)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tSOURCE\tDEST\tINSERTED\tUPDATED\tSHA-256\tMATCH")
			for _, t := range res.Tables {
				sum := short(t.SourceSum)
				match := "yes"
				if !t.Match {
					sum += " ≠ " + short(t.DestSum)
					match = "NO"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", t.Table, t.SourceRows, t.DestRows, t.Inserted, t.Updated, sum, match)
			}
			if werr := tw.Flush(); werr != nil {
				return werr
			}
			return err
		},
	}
	cmd.Flags().StringVar(&mo.ConfigPath, "config", "", "config file (default $SWITCHBOARD_CONFIG or <state dir>/switchboard.json5)")
	cmd.Flags().StringVar(&mo.From, "from", "", "SQLite database to copy (default <state dir>/switchboard.db)")
	cmd.Flags().StringVar(&mo.To, "to", "", "PostgreSQL URL (default storage.url or $SWITCHBOARD_DATABASE_URL)")
	return cmd
}

// short is the first 16 hex digits of a digest.
func short(sum string) string {
	if len(sum) > 16 {
		return sum[:16]
	}
	return sum
}
