package httpserve

import (
	"fmt"
	"net/http"
	"strings"
)

// UpgradeOr sends WebSocket upgrades to ws and every other request to
// page: one path serves both the protocol and the browser UI, as the
// reference's gateway does.
func UpgradeOr(ws, page http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			ws.ServeHTTP(w, r)
			return
		}
		page.ServeHTTP(w, r)
	})
}

// MountWebhook serves h for POSTs to path on mux; a path that conflicts
// with one of the gateway's own patterns is an error, not the mux's panic.
func MountWebhook(mux *http.ServeMux, path string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("httpserve: channel webhook path %q: %v", path, r)
		}
	}()
	mux.Handle("POST "+path, h)
	return nil
}
