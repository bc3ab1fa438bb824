package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// maxParamsBytes bounds params read from stdin.
const maxParamsBytes = 16 << 20

func newCallCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "call METHOD [PARAMS_JSON|-]",
		Short: "Call any gateway method and print its result as JSON",
		Long: `Call sends one request to the gateway and prints the response payload as
indented JSON. PARAMS_JSON is the params object; "-" reads it from stdin;
without it the request has no params. A gateway error is printed as
"error: <CODE>: <message>" and the command exits non-zero.`,
		Example: `  switchboard call health
  switchboard call sessions.list '{"limit": 5}'
  echo '{"sessionKey":"main"}' | switchboard call chat.history -`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			params, err := readParams(cmd.InOrStdin(), args[1:])
			if err != nil {
				return err
			}
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, args[0], params)
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), raw)
			})
		},
	}
}

// readParams returns the params argument ("-" reads stdin), or nil when
// there is none. It must be valid JSON.
func readParams(stdin io.Reader, args []string) (json.RawMessage, error) {
	if len(args) == 0 {
		return nil, nil
	}
	b := []byte(args[0])
	if args[0] == "-" {
		var err error
		if b, err = io.ReadAll(io.LimitReader(stdin, maxParamsBytes+1)); err != nil {
			return nil, fmt.Errorf("params: read stdin: %w", err)
		}
		if len(b) > maxParamsBytes {
			return nil, fmt.Errorf("params: more than %d bytes on stdin", maxParamsBytes)
		}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("params: invalid JSON at byte %d: %v", se.Offset, err)
		}
		return nil, fmt.Errorf("params: invalid JSON: %v", err)
	}
	return b, nil
}
