package cli

import (
	"fmt"
	"net/url"
	"os/exec"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
)

// dashboardURL is the browser UI's address for a gateway WebSocket URL,
// with the token in the fragment (never sent to the server in a request
// line or logged; the page keeps it in session storage and clears it from
// the address bar).
func dashboardURL(wsURL, token string) (string, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return "", fmt.Errorf("gateway URL %q: %w", wsURL, err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	case "http", "https":
	default:
		return "", fmt.Errorf("gateway URL %q: want ws:// or wss://", wsURL)
	}
	u.Path, u.RawQuery, u.Fragment = "/", "", ""
	link := u.String()
	if token != "" {
		// What the page's decodeURIComponent reverses ("+" stays "+").
		link += "#token=" + strings.ReplaceAll(url.QueryEscape(token), "+", "%20")
	}
	return link, nil
}

func newDashboardCmd(g *globalFlags) *cobra.Command {
	var noOpen bool
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Print (and open) the web UI's link, logged in",
		Long: `Dashboard prints the address of the gateway's web UI with the gateway
token in the link's fragment, so the page logs in by itself, and opens it
in the browser when this machine has a display (xdg-open, open or start).
Treat the link like the token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.resolve(cmd)
			link, err := dashboardURL(g.url, g.token)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), link); err != nil {
				return err
			}
			if paths, ok := g.noLocalGateway(cmd); ok {
				// The link would not load, and on a fresh state dir it has no
				// token yet: serve generates it on its first start.
				fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: no gateway is running on %s: start it with `switchboard serve`, then run `switchboard dashboard` again\n", paths.StateDir)
			}
			if !noOpen && hasDisplay(g) {
				if err := openBrowser(link); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "switchboard: could not open a browser:", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "only print the link")
	return cmd
}

// hasDisplay reports whether a browser can be opened here.
func hasDisplay(g *globalFlags) bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return strings.TrimSpace(g.env("DISPLAY")) != "" || strings.TrimSpace(g.env("WAYLAND_DISPLAY")) != ""
}

// openBrowser opens link with the platform's opener, without waiting for
// the browser.
func openBrowser(link string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", link)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", link)
	default:
		cmd = exec.Command("xdg-open", link)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap the opener; the browser outlives it
	return nil
}
