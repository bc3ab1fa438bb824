package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/statedir"
)

// EnvURL names the environment variable that overrides the default gateway
// URL (--url wins over it).
const EnvURL = "SWITCHBOARD_URL"

// DefaultTimeout bounds one client command when --timeout is not given.
const DefaultTimeout = 30 * time.Second

// globalFlags are the root's persistent flags shared by every client
// subcommand. Secrets are never printed, so the environment is consulted
// only when a command runs, never to fill in a flag default shown by --help.
type globalFlags struct {
	env        settings.Env
	isTerminal func(io.Writer) bool

	url      string
	token    string
	password string
	json     bool
	timeout  time.Duration
}

func (g *globalFlags) register(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.url, "url", client.DefaultURL, "gateway WebSocket URL (env "+EnvURL+")")
	f.StringVar(&g.token, "token", "", "gateway token (env "+settings.EnvGatewayToken+")")
	f.StringVar(&g.password, "password", "", "gateway password (env "+settings.EnvGatewayPassword+")")
	f.BoolVar(&g.json, "json", false, "print machine-readable JSON")
	f.DurationVar(&g.timeout, "timeout", DefaultTimeout, "how long to wait for the gateway")
}

// resolve fills in the connection settings the flags left unset from the
// environment and normalises the URL.
func (g *globalFlags) resolve(cmd *cobra.Command) {
	fromEnv := func(flag, name string, dst *string) {
		if cmd.Flags().Changed(flag) {
			return
		}
		if v := strings.TrimSpace(g.env(name)); v != "" {
			*dst = v
		}
	}
	fromEnv("url", EnvURL, &g.url)
	fromEnv("token", settings.EnvGatewayToken, &g.token)
	fromEnv("password", settings.EnvGatewayPassword, &g.password)
	paths, perr := settings.ResolvePaths(g.env)
	if !cmd.Flags().Changed("url") && strings.TrimSpace(g.env(EnvURL)) == "" && perr == nil {
		g.url = localURL(paths, g.env)
	}
	g.url = normalizeURL(g.url)
	// Then, for a gateway on this machine, the credentials of the config
	// file's gateway.auth (never sent to another host).
	if g.token == "" && g.password == "" && perr == nil && loopbackURL(g.url) {
		if set, _, err := settings.Load(paths.ConfigPath, g.env); err == nil {
			g.token, g.password = strings.TrimSpace(set.Auth.Token), strings.TrimSpace(set.Auth.Password)
		}
	}
	// Last, the token a local gateway generated in the state dir.
	if g.token == "" && g.password == "" && perr == nil {
		if tok, err := settings.ReadGatewayToken(paths.StateDir); err == nil {
			g.token = tok
		}
	}
}

// loopbackURL reports whether gateway URL u names this machine (a
// loopback address or localhost).
func loopbackURL(u string) bool {
	parsed, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := parsed.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// missingCredentials says where the CLI looked for the gateway's
// credentials when it found none.
func (g *globalFlags) missingCredentials() string {
	file := "the config file"
	if paths, err := settings.ResolvePaths(g.env); err == nil {
		file = paths.ConfigPath
	}
	return "no gateway token: none given with --token or " + settings.EnvGatewayToken + ", and no gateway.auth.token in " + file
}

// localURL is the gateway URL when neither --url nor SWITCHBOARD_URL says:
// the gateway running on this state dir (it records its address in the
// state dir's lock file), else gateway.port from the config file, else the
// default.
func localURL(paths settings.Paths, env settings.Env) string {
	if rec, ok, err := statedir.Running(paths.StateDir); err == nil && ok && rec.URL != "" {
		return rec.URL
	}
	if set, _, err := settings.Load(paths.ConfigPath, env); err == nil && set.GatewayPort > 0 {
		return "ws://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(set.GatewayPort))
	}
	return client.DefaultURL
}

// shownURL is the gateway URL as messages show it, with any password in
// it masked.
func (g *globalFlags) shownURL() string {
	u, err := url.Parse(g.url)
	if err != nil {
		return g.url
	}
	return u.Redacted()
}

// normalizeURL accepts "host:port" as shorthand for "ws://host:port".
func normalizeURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return client.DefaultURL
	}
	if !strings.Contains(u, "://") {
		return "ws://" + u
	}
	return u
}

// conn is one gateway connection of a command. Unless the command reads
// events itself, a goroutine drains them so that the client's reader never
// blocks on a full event buffer; Close waits for it.
type conn struct {
	*client.Client
	drained chan struct{} // nil when events are not drained
}

// Close closes the connection and waits for the event drain.
func (c *conn) Close() error {
	err := c.Client.Close()
	if c.drained != nil {
		<-c.drained
	}
	return err
}

// dial connects to the gateway. drain says whether events are discarded.
func (g *globalFlags) dial(ctx context.Context, drain bool, caps ...string) (*conn, error) {
	cl, err := client.Dial(ctx, client.Options{
		URL:      g.url,
		Token:    g.token,
		Password: g.password,
		Version:  Version,
		Caps:     caps,
	})
	if err != nil {
		return nil, g.dialError(ctx, err)
	}
	c := &conn{Client: cl}
	if drain {
		c.drain()
	}
	return c, nil
}

// drain starts discarding events, once; the caller must no longer read
// them. Close waits for the drain to end.
func (c *conn) drain() {
	if c.drained != nil {
		return
	}
	c.drained = make(chan struct{})
	go func() {
		defer close(c.drained)
		for range c.Events() {
		}
	}()
}

// dialError turns a failed Dial into one line a person can act on.
func (g *globalFlags) dialError(ctx context.Context, err error) error {
	var gerr *client.Error
	switch {
	case errors.As(err, &gerr):
		// The handshake was rejected: the gateway's message says why
		// ("unauthorized: gateway token mismatch …").
		msg := oneLine(gerr.Message)
		if g.token == "" && g.password == "" {
			msg += " (no credentials given: use --token or " + settings.EnvGatewayToken + ")"
		}
		return errors.New(msg)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the gateway at %s: is `switchboard serve` running?", g.shownURL())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("cannot reach the gateway at %s: no answer within %s", g.shownURL(), g.timeout)
	case errors.Is(ctx.Err(), context.Canceled):
		return errInterrupted
	}
	return fmt.Errorf("cannot reach the gateway at %s: %v", g.shownURL(), redactErr(err, g.url, g.shownURL()))
}

// redactErr returns err's text with the raw URL replaced by the shown one.
func redactErr(err error, raw, shown string) string {
	return strings.ReplaceAll(err.Error(), raw, shown)
}

// errInterrupted is returned when the user interrupts a command.
var errInterrupted = errors.New("interrupted")

// withConn runs fn on a fresh connection with events drained, bounded by
// --timeout.
func (g *globalFlags) withConn(cmd *cobra.Command, fn func(ctx context.Context, c *conn) error) error {
	g.resolve(cmd)
	ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
	defer cancel()
	c, err := g.dial(ctx, true)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// gatewayError is a gateway error response, printed as
// "error: <CODE>: <message>" on one line.
type gatewayError struct {
	err *client.Error
}

// Error returns "error: <CODE>: <message>".
func (e *gatewayError) Error() string {
	return "error: " + e.err.Code + ": " + oneLine(e.err.Message)
}

// Unwrap returns the gateway's error.
func (e *gatewayError) Unwrap() error { return e.err }

// callError turns the error of a call of method into one clear line.
func (g *globalFlags) callError(ctx context.Context, method string, err error) error {
	var gerr *client.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &gerr):
		return &gatewayError{gerr}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: no answer from the gateway within %s", method, g.timeout)
	case errors.Is(ctx.Err(), context.Canceled):
		return errInterrupted
	}
	return fmt.Errorf("%s: lost the connection to the gateway: %v", method, err)
}

// caller sends requests on a gateway connection; *conn is one.
type caller interface {
	CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// callRaw calls method and returns the raw payload.
func (g *globalFlags) callRaw(ctx context.Context, c caller, method string, params any) (json.RawMessage, error) {
	raw, err := c.CallRaw(ctx, method, params)
	return raw, g.callError(ctx, method, err)
}

// call calls method and decodes its result into result.
func (g *globalFlags) call(ctx context.Context, c caller, method string, params, result any) error {
	raw, err := g.callRaw(ctx, c, method, params)
	if err != nil {
		return err
	}
	return decodeResult(method, raw, result)
}

// writeJSON writes v as indented JSON followed by a newline. A
// json.RawMessage is re-indented as it is, keeping the gateway's member
// order.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return fmt.Errorf("the gateway sent invalid JSON: %w", err)
		}
	} else {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// oneLine collapses every run of whitespace, newlines included, to one
// space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// decodeResult decodes the raw result of method into v.
func decodeResult(method string, raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: decode result: %w", method, err)
	}
	return nil
}

// requireSession fails with "no such session: KEY" when the gateway has no
// session KEY, so that reading or patching a mistyped key is an error
// rather than an empty transcript or a new session.
func (g *globalFlags) requireSession(ctx context.Context, c caller, key string) error {
	_, err := c.CallRaw(ctx, wire.MethodSessionsResolve, wire.SessionsResolveParams{Key: key, IncludeGlobal: true, IncludeUnknown: true})
	if err == nil {
		return nil
	}
	if ge, ok := errors.AsType[*client.Error](err); ok && strings.HasPrefix(ge.Message, "No session found") {
		return fmt.Errorf("no such session: %s (switchboard sessions list shows the keys)", key)
	}
	return g.callError(ctx, wire.MethodSessionsResolve, err)
}
