package cli

import "github.com/spf13/cobra"

func newSessionsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, read, message and manage sessions",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(
		newSessionsListCmd(g),
		newSessionsHistoryCmd(g),
		newSessionsSendCmd(g),
		newSessionsSpawnCmd(g),
		newSessionsPatchCmd(g),
		newSessionsDeleteCmd(g),
		newSessionsResetCmd(g),
		newSessionsCompactCmd(g),
		newSessionsExportCmd(g),
		newSessionsQueueCmd(g),
		newSessionsSearchCmd(g),
	)
	return cmd
}
