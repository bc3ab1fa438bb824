// Package doctor owns "switchboard doctor": what serve needs before it can
// run well — the config parses and its models resolve, the state dir is
// private and writable, the port is free (or ours), the sandbox backend
// works, the store is intact — checked without changing anything. The
// command runs it; the daemon repeats its model check at start.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/statedir"
	"github.com/switchboardhq/switchboard/internal/storage"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// Check is one line of "switchboard doctor": what was checked, whether it
// passed, and how to fix it when it did not.
type Check struct {
	Name   string
	Status CheckStatus
	Detail string
	Fix    string // empty when there is nothing to do
}

// CheckStatus is the outcome of one Check.
type CheckStatus string

// The outcomes of a Check. Only CheckFail makes doctor exit non-zero.
const (
	CheckOK   CheckStatus = "ok"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "FAIL"
)

// Options says what Run inspects. Zero values mean the process
// environment and the default config path.
type Options struct {
	Env        settings.Env
	ConfigPath string
	// Port, when non-nil, is the port serve would be given with --port.
	Port *int
}

// Run checks what serve needs before it can run well: the config parses
// and its model references resolve, provider keys are present, the state
// dir is writable with safe modes, the port is free (or ours), the lock
// holder is alive and the store is intact. It changes nothing.
func Run(ctx context.Context, opts Options) []Check {
	env := opts.Env
	if env == nil {
		env = settings.OSEnv
	}
	var out []Check
	add := func(name string, st CheckStatus, detail, fix string) {
		out = append(out, Check{Name: name, Status: st, Detail: detail, Fix: fix})
	}

	set, warnings, err := settings.Load(opts.ConfigPath, env)
	if err != nil {
		add("config", CheckFail, err.Error(), "fix the config file (the error names file and line)")
		return out
	}
	paths := settings.Paths{StateDir: set.StateDir, ConfigPath: set.ConfigPath}
	switch {
	case len(warnings) > 0:
		// Each warning names its file and line; the path is said once.
		msgs := make([]string, 0, len(warnings))
		for _, w := range warnings {
			if w.File == paths.ConfigPath {
				w.File = ""
			}
			msgs = append(msgs, w.String())
		}
		add("config", CheckWarn, paths.ConfigPath+": "+strings.Join(msgs, "; "), "remove or correct the keys named")
	case fileExists(paths.ConfigPath):
		add("config", CheckOK, paths.ConfigPath+" parses", "")
	default:
		add("config", CheckOK, "no config file at "+paths.ConfigPath+": built-in defaults", "")
	}

	out = append(out, Models(set)...)
	out = append(out, stateDirChecks(paths.StateDir)...)

	rec, running, lerr := statedir.Running(paths.StateDir)
	switch {
	case lerr != nil:
		add("gateway", CheckWarn, lerr.Error(), "remove "+filepath.Join(paths.StateDir, statedir.LockFile)+" if no gateway runs")
	case running:
		add("gateway", CheckOK, fmt.Sprintf("running on this state dir (pid %d, %s)", rec.PID, rec.URL), "")
	default:
		add("gateway", CheckOK, "not running on this state dir", "")
	}
	out = append(out, portCheck(set, opts.Port, rec, running))
	if c, ok := sandboxCheck(ctx, set); ok {
		out = append(out, c)
	}

	sc, live := storeCheck(ctx, set, paths.StateDir)
	out = append(out, sc)
	if len(live) > 0 {
		out = append(out, workspacesCheck(AgentWorkspaces(set), live))
	}
	return out
}

// Models resolves every agent's model (and sub-agent model) and checks
// that the providers behind them have what they need to run.
func Models(set *settings.Settings) []Check {
	mods := registry.New(set)
	var out []Check
	seen := map[string]bool{}
	var problems []string
	var fixes []string
	var refs []string
	ids := set.AgentIDs()
	if len(ids) == 0 {
		ids = []string{set.DefaultAgent}
	}
	for _, id := range ids {
		for _, ref := range append([]string{mods.DefaultModelRef(id), set.Agent(id).SubagentModel}, set.Agent(id).ModelFallbacks...) {
			if ref == "" || seen[ref] {
				continue
			}
			seen[ref] = true
			refs = append(refs, ref)
			if msg, fix := modelProblem(set, mods, id, ref); msg != "" {
				problems = append(problems, msg)
				if fix != "" {
					fixes = append(fixes, fix)
				}
			}
		}
	}
	if len(problems) > 0 {
		out = append(out, Check{Name: "models", Status: CheckFail, Detail: strings.Join(problems, "; "), Fix: strings.Join(fixes, "; ")})
	} else {
		verb := " resolve"
		if len(refs) == 1 {
			verb = " resolves"
		}
		out = append(out, Check{Name: "models", Status: CheckOK, Detail: strings.Join(refs, ", ") + verb})
	}
	return out
}

// modelProblem says why agent id cannot run ref, or "" when it can.
func modelProblem(set *settings.Settings, mods *registry.Registry, agentID, ref string) (msg, fix string) {
	provID, _ := settings.SplitModelRef(ref)
	provID = strings.ToLower(provID)
	keyFix := fmt.Sprintf("set %s_API_KEY or models.providers.%s.apiKey", strings.ToUpper(provID), provID)
	if _, err := mods.ResolveModel(agentID, ref); err != nil {
		if _, ok := set.Provider(provID); !ok && (provID == "openai" || provID == "anthropic") {
			return fmt.Sprintf("agent %s: model %s: no API key for provider %s", agentID, ref, provID), keyFix
		}
		return fmt.Sprintf("agent %s: %v", agentID, err),
			"configure the provider under models.providers, or pick a model \"<provider>/<model>\" that exists (" + scripted.Model + " runs offline)"
	}
	pc, ok := set.Provider(provID)
	if !ok {
		return "", "" // the built-in offline model
	}
	official := strings.HasPrefix(pc.BaseURL, settings.DefaultOpenAIBaseURL) || strings.HasPrefix(pc.BaseURL, settings.DefaultAnthropicBaseURL)
	if pc.APIKey == "" && official {
		return fmt.Sprintf("agent %s: model %s: no API key for provider %s", agentID, ref, provID), keyFix
	}
	return "", ""
}

// stateDirChecks checks that the state dir can be written and that it and
// the secrets in it are private.
func stateDirChecks(dir string) []Check {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		parent := filepath.Dir(dir)
		if werr := statedir.ProbeWritable(parent); werr != nil {
			return []Check{{Name: "state dir", Status: CheckFail, Detail: fmt.Sprintf("%s does not exist and %s is not writable: %v", dir, parent, werr), Fix: "create it (mkdir -m 700 " + dir + ") or set " + settings.EnvStateDir}}
		}
		return []Check{{Name: "state dir", Status: CheckOK, Detail: dir + " does not exist yet; serve creates it (mode 0700)"}}
	}
	if err != nil {
		return []Check{{Name: "state dir", Status: CheckFail, Detail: err.Error(), Fix: "set " + settings.EnvStateDir + " to a directory you own"}}
	}
	if !fi.IsDir() {
		return []Check{{Name: "state dir", Status: CheckFail, Detail: dir + " is not a directory", Fix: "set " + settings.EnvStateDir + " to a directory"}}
	}
	if err := statedir.ProbeWritable(dir); err != nil {
		return []Check{{Name: "state dir", Status: CheckFail, Detail: "state dir not writable: " + err.Error(), Fix: "make " + dir + " writable by this user (and check the disk is not full)"}}
	}
	var loose []string
	if fi.Mode().Perm()&0o077 != 0 {
		loose = append(loose, fmt.Sprintf("%s is %04o", dir, fi.Mode().Perm()))
	}
	for _, name := range []string{settings.GatewayTokenFile, storage.DBFile, storage.DBFile + "-wal", storage.DBFile + "-shm", statedir.LockFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().Perm()&0o077 != 0 {
			loose = append(loose, fmt.Sprintf("%s is %04o", name, fi.Mode().Perm()))
		}
	}
	if len(loose) > 0 {
		return []Check{{Name: "state dir", Status: CheckWarn, Detail: dir + " writable, but others can read it: " + strings.Join(loose, ", "), Fix: "chmod -R go-rwx " + dir}}
	}
	return []Check{{Name: "state dir", Status: CheckOK, Detail: dir + " writable, mode 0700"}}
}

// portCheck checks that serve can listen on its port: free, or held by this
// state dir's own gateway.
func portCheck(set *settings.Settings, port *int, rec statedir.Record, running bool) Check {
	addrs := set.ListenAddrs()
	if port != nil {
		for i, a := range addrs {
			host, _, _ := net.SplitHostPort(a)
			addrs[i] = net.JoinHostPort(host, strconv.Itoa(*port))
		}
	}
	if len(addrs) == 0 {
		return Check{Name: "port", Status: CheckFail, Detail: "no listen address configured", Fix: "set gateway.bind and gateway.port"}
	}
	addr := addrs[0]
	if _, p, _ := net.SplitHostPort(addr); p == "0" {
		return Check{Name: "port", Status: CheckOK, Detail: "port 0: serve picks a free port"}
	}
	if running {
		for _, a := range rec.Addrs {
			if samePort(a, addr) {
				return Check{Name: "port", Status: CheckOK, Detail: addr + " is served by this state dir's gateway"}
			}
		}
		if port == nil && len(rec.Addrs) > 0 {
			// The gateway was started on another port (serve --port):
			// that is the port it serves, not the configured one.
			return Check{Name: "port", Status: CheckWarn,
				Detail: fmt.Sprintf("this state dir's gateway serves %s, not the configured %s (started with serve --port?)", rec.Addrs[0], addr),
				Fix:    "set gateway.port to the port you use, so that a restart (and `switchboard service install`) keeps it"}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return Check{Name: "port", Status: CheckFail, Detail: fmt.Sprintf("cannot listen on %s: %v", addr, err),
			Fix: "stop the program using it, or choose another gateway.port (or serve --port)"}
	}
	ln.Close()
	return Check{Name: "port", Status: CheckOK, Detail: addr + " is free"}
}

func samePort(a, b string) bool {
	_, pa, _ := net.SplitHostPort(a)
	_, pb, _ := net.SplitHostPort(b)
	return pa != "" && pa == pb
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// sandboxCheck probes the bubblewrap backend when an agent is sandboxed
// with it: whether it works here and how its processes are bounded (a
// root gateway without a writable pids cgroup cannot bound them and its
// sandboxes refuse to start). ok is false when no agent uses it.
func sandboxCheck(ctx context.Context, set *settings.Settings) (Check, bool) {
	ids := set.AgentIDs()
	if len(ids) == 0 {
		ids = []string{set.DefaultAgent}
	}
	var users []string
	for _, id := range ids {
		if a := set.Agent(id); a.SandboxMode != "off" && a.SandboxBackend == sandbox.BackendBubblewrap {
			users = append(users, id)
		}
	}
	if len(users) == 0 {
		return Check{}, false
	}
	if _, err := sandbox.Check(ctx); err != nil {
		return Check{Name: "sandbox", Status: CheckFail, Detail: err.Error(), Fix: "fix what the message names, or set sandbox.mode to \"off\" for " + strings.Join(users, ", ")}, true
	}
	return Check{Name: "sandbox", Status: CheckOK, Detail: "bubblewrap available; processes bounded by " + sandbox.ProcessBound()}, true
}

// storeCheck is doctor's "store" line: the SQLite file's integrity, or
// whether PostgreSQL answers and its schema is one this binary knows; on
// PostgreSQL it also returns the live gateway nodes.
func storeCheck(ctx context.Context, set *settings.Settings, stateDir string) (Check, []string) {
	ss := set.Storage
	if ss.Backend == settings.BackendPostgres {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := postgres.Check(ctx, ss.URL)
		switch {
		case errors.Is(err, postgres.ErrNewerSchema):
			return Check{Name: "store", Status: CheckFail, Detail: ss.Display + ": " + err.Error(), Fix: "run the newer switchboard that migrated this database"}, nil
		case err != nil:
			return Check{Name: "store", Status: CheckFail, Detail: ss.Display + ": " + err.Error(),
				Fix: "check that PostgreSQL runs and that storage.url (or " + settings.EnvDatabaseURL + ") names a database this user may use"}, nil
		case res.SchemaVersion == 0:
			return Check{Name: "store", Status: CheckOK, Detail: ss.Display + " reachable; serve creates the schema"}, nil
		default:
			return Check{Name: "store", Status: CheckOK, Detail: fmt.Sprintf("%s reachable (schema %d)", ss.Display, res.SchemaVersion)}, res.LiveNodes
		}
	}
	db := filepath.Join(stateDir, storage.DBFile)
	res, err := sqlite.Check(ctx, db)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Check{Name: "store", Status: CheckOK, Detail: "no database yet; serve creates " + db}, nil
	case errors.Is(err, sqlite.ErrNewerSchema):
		return Check{Name: "store", Status: CheckFail, Detail: err.Error(), Fix: "run the newer switchboard that wrote this database"}, nil
	case err != nil:
		return Check{Name: "store", Status: CheckFail, Detail: err.Error(), Fix: "restore " + db + " from a backup, or move it away to start empty"}, nil
	default:
		return Check{Name: "store", Status: CheckOK, Detail: fmt.Sprintf("%s intact (schema %d)", db, res.SchemaVersion) + pagesNote(res)}, nil
	}
}

// pagesNote says, after the store line's detail, that a database has
// larger pages than this binary creates them with: it works as it is, but
// every commit writes more (docs/state.md says how to convert it).
func pagesNote(res sqlite.CheckResult) string {
	if res.PageSize <= res.NewPageSize || res.NewPageSize == 0 {
		return ""
	}
	return fmt.Sprintf("; %d-byte pages, where new databases have %d: converting it makes each write cheaper (docs/state.md)", res.PageSize, res.NewPageSize)
}
