package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newServeCmd(opts Options) *cobra.Command {
	var so ServeOptions
	var port int
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway (SQLite in the state dir, loopback, the offline model when no API key is set)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Serve == nil {
				return errors.New("serve is not available in this build")
			}
			if cmd.Flags().Changed("port") {
				if port < 0 || port > 65535 {
					return errors.New("--port must be 0..65535")
				}
				so.Port = &port
			}
			return opts.Serve(cmd.Context(), so)
		},
	}
	cmd.Flags().StringVar(&so.ConfigPath, "config", "", "config file (default $SWITCHBOARD_CONFIG or <state dir>/switchboard.json5)")
	cmd.Flags().IntVar(&port, "port", 0, "port to listen on (default gateway.port or 18789; 0 picks a free port)")
	cmd.Flags().StringVar(&so.LogLevel, "log-level", "", "log level for the console and the log file: silent, fatal, error, warn, info, debug or trace (default logging.level, env SWITCHBOARD_LOG_LEVEL)")
	cmd.Flags().StringVar(&so.LogFormat, "log-format", "", `console log format: "text" or "json" (default logging.consoleStyle; the log file is always JSON lines)`)
	cmd.Flags().StringVar(&so.Bind, "bind", "", `"loopback", "lan" or an IP address (default gateway.bind or loopback)`)
	return cmd
}
