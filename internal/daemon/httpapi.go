package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/toolbox"
)

// httpFront is the HTTP API server the daemon mounts beside the gateway.
type httpFront = httpapi.Server

// newHTTPAPI builds the HTTP front doors served beside the WebSocket
// protocol, authenticated by the gateway's own check.
func newHTTPAPI(set *settings.Settings, st store.Store, runner *agent.Runner, adm *admission.Admitter, mods *registry.Registry, gw *gateway.Server,
	box *toolbox.Box, ws *toolbox.Workspaces, log *slog.Logger) (*httpapi.Server, error) {
	inv, err := toolbox.NewInvoker(set, st, box, ws, log, true)
	if err != nil {
		return nil, err
	}
	return httpapi.New(httpapi.Config{
		Runner: runner, Admit: adm, Settings: set, Tools: inv, Models: mods, Embeddings: mods, Logger: log,
		Auth: func(r *http.Request) httpapi.Auth {
			a := gw.AuthorizeHTTP(r)
			return httpapi.Auth{OK: a.OK, RateLimited: a.RateLimited, RetryAfter: a.RetryAfter}
		},
	})
}

// shutdownHTTP stops the HTTP server: requests following runs get the
// grace period for their runs to end; past it, the API lets them go (they
// answer "gateway shutting down") and the server waits for them briefly.
func (d *Daemon) shutdownHTTP(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { d.api.Close() })
	defer stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.grace+5*time.Second)
	defer cancel()
	err := d.srv.Shutdown(sctx)
	if stop() {
		d.api.Close()
	}
	return err
}
