package gateway

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/toolinvoke"
)

// The tables below are the package-level values as they were built at
// process start before issue 37 made them switches and static data; each
// test checks that every old key gives the old value.

var oldOperatorUIClients = map[string]bool{"openclaw-control-ui": true, "openclaw-browser-copilot": true, "openclaw-tui": true}

var oldRowStatuses = map[store.RunStatus]string{
	store.RunQueued: "queued", store.RunRunning: "running", store.RunOK: "done",
	store.RunError: "failed", store.RunAborted: "killed", store.RunTimeout: "timeout",
}

var oldRPCErrorCodes = map[string]string{
	toolinvoke.TypeInvalidRequest: "validation_error",
	toolinvoke.TypeNotFound:       "not_found",
	toolinvoke.TypeBlocked:        "forbidden",
	toolinvoke.TypeToolError:      "internal_error",
}

// oldChatCommands builds the commands as the old literal and init did.
func TestOperatorUIClientTable(t *testing.T) {
	probes := []string{"", "openclaw", "openclaw-control-ui ", "OPENCLAW-TUI", "openclaw-cli", "webchat"}
	for id := range oldOperatorUIClients {
		probes = append(probes, id, id+"x", id[1:])
	}
	for _, id := range probes {
		if got, want := operatorUIClient(id), oldOperatorUIClients[id]; got != want {
			t.Errorf("operatorUIClient(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestRowStatusTable(t *testing.T) {
	probes := []store.RunStatus{"", "done", "failed", "killed", "OK", "unknown"}
	for st := range oldRowStatuses {
		probes = append(probes, st)
	}
	for _, st := range probes {
		if got, want := rowStatus(st), oldRowStatuses[st]; got != want {
			t.Errorf("rowStatus(%q) = %q, want %q", st, got, want)
		}
	}
}

func TestRPCErrorCodeTable(t *testing.T) {
	probes := []string{"", "validation_error", "forbidden", "internal_error", "Tool_error"}
	for typ := range oldRPCErrorCodes {
		probes = append(probes, typ)
	}
	for _, typ := range probes {
		if got, want := rpcErrorCode(typ), oldRPCErrorCodes[typ]; got != want {
			t.Errorf("rpcErrorCode(%q) = %q, want %q", typ, got, want)
		}
	}
}

// TestChatCommandsCatalog: every chat command is listed as the
// reference's catalog lists a native command (its name, "/name" first
// among its aliases, source native, scope both), and every one is a
// command chat.send carries out rather than text for the model.
func TestChatCommandsCatalog(t *testing.T) {
	for _, c := range chatCommands {
		if c.NativeName != c.Name || len(c.TextAliases) == 0 || c.TextAliases[0] != "/"+c.Name || c.Source != "native" || c.Scope != "both" ||
			c.Description == "" || c.Category == "" {
			t.Errorf("catalog entry %+v", c)
		}
		for _, alias := range c.TextAliases {
			if !isStandaloneSetting(alias) {
				if _, ok := compaction.ParseCommand(alias); !ok {
					t.Errorf("%s: chat.send does not carry out %q", c.Name, alias)
				}
			}
		}
	}
}

func TestErrSessionChangedAsBuiltBefore(t *testing.T) {
	old := invalid("session changed").WithDetails(map[string]any{"code": wire.DetailSessionChanged, "reason": "session-changed"})
	if diff := cmp.Diff(old, errSessionChanged); diff != "" {
		t.Errorf("errSessionChanged (-old +new):\n%s", diff)
	}
}

func TestCGNATPrefix(t *testing.T) {
	want := netip.MustParsePrefix("100.64.0.0/10")
	if got := cgnat(); got != want {
		t.Fatalf("cgnat() = %v, want %v", got, want)
	}
	for _, a := range []string{"100.63.255.255", "100.64.0.0", "100.100.100.100", "100.127.255.255", "100.128.0.0", "::ffff:100.64.0.1", "fd7a:115c:a1e0::1"} {
		ip := netip.MustParseAddr(a)
		if got := cgnat().Contains(ip); got != want.Contains(ip) {
			t.Errorf("cgnat().Contains(%s) = %v", a, got)
		}
	}
}
