// Package irctest runs the IRC connector inside the real gateway against a
// real IRC server (Debian's ngircd) started on a free loopback port, with
// the fake LLM over the OpenAI wire format. Tests skip when ngircd is
// missing, and fail under CI=true.
package irctest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/irc"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

const token = "irc-test-token"

// ngircdPath finds ngircd; without it the test skips, or fails under
// CI=true.
func ngircdPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("ngircd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/ngircd"); err == nil {
		return "/usr/sbin/ngircd"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("ngircd is missing (apt-get install ngircd); the IRC tests need it under CI=true")
	}
	t.Skip("ngircd is missing (apt-get install ngircd)")
	return ""
}

// server is a running ngircd.
type server struct {
	t    *testing.T
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
	out  *bytes.Buffer
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer writes an ngircd config for a free loopback port and runs
// the server in the foreground (-n).
func startServer(t *testing.T) *server {
	t.Helper()
	s := &server{t: t, bin: ngircdPath(t), dir: t.TempDir(), port: freePort(t)}
	uid := ""
	if os.Getuid() == 0 { // ngircd refuses to keep running as root
		uid = "\tServerUID = 65534\n\tServerGID = 65534\n"
	}
	conf := fmt.Sprintf(`[Global]
	Name = irc.test
	Info = switchboard test server
	Listen = 127.0.0.1
	Ports = %d
	MotdPhrase = "test"
	PidFile = %s
%s[Limits]
	MaxNickLength = 30
	PingTimeout = 120
	PongTimeout = 20
	MaxConnectionsIP = 0
	MaxJoins = 0
[Options]
	PAM = no
	Ident = no
	DNS = no
	RequireAuthPing = no
`, s.port, filepath.Join(s.dir, "ngircd.pid"), uid)
	if err := os.WriteFile(filepath.Join(s.dir, "ngircd.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) start() {
	s.t.Helper()
	s.out = &bytes.Buffer{}
	s.cmd = exec.Command(s.bin, "-n", "-f", filepath.Join(s.dir, "ngircd.conf"))
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("ngircd: %v", err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("ngircd exited:\n%s", s.out)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ngircd did not listen on %s:\n%s", s.addr(), s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// user is a raw-socket IRC client.
type user struct {
	t    *testing.T
	nick string
	conn net.Conn
	msgs chan irc.Message
	wmu  sync.Mutex
}

// connectUser registers nick on srv and starts reading; PINGs are
// answered, everything else is queued for expect.
func connectUser(t *testing.T, srv *server, nick string) *user {
	t.Helper()
	conn, err := net.DialTimeout("tcp", srv.addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	u := &user{t: t, nick: nick, conn: conn, msgs: make(chan irc.Message, 1024)}
	t.Cleanup(func() { conn.Close() })
	go func() {
		defer close(u.msgs)
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			m, err := irc.Parse(line)
			if err != nil {
				continue
			}
			if m.Command == "PING" {
				u.send("PONG :" + m.Param(0))
				continue
			}
			u.msgs <- m
		}
	}()
	u.send("NICK " + nick)
	u.send("USER " + nick + " 0 * :test user")
	u.expect(10*time.Second, func(m irc.Message) bool { return m.Command == "001" })
	return u
}

func (u *user) send(line string) {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	if _, err := io.WriteString(u.conn, line+"\r\n"); err != nil {
		u.t.Errorf("%s: write: %v", u.nick, err)
	}
}

// expect waits for a message match accepts, failing after d.
func (u *user) expect(d time.Duration, match func(irc.Message) bool) irc.Message {
	u.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-u.msgs:
			if !ok {
				u.t.Fatalf("%s: connection closed while waiting", u.nick)
			}
			if match(m) {
				return m
			}
		case <-timer.C:
			u.t.Fatalf("%s: timed out after %s", u.nick, d)
		}
	}
}

// privmsgFrom matches a PRIVMSG from nick to target.
func privmsgFrom(nick, target string) func(irc.Message) bool {
	return func(m irc.Message) bool {
		return m.Command == "PRIVMSG" && strings.EqualFold(m.Nick(), nick) && strings.EqualFold(m.Param(0), target)
	}
}

// startGateway runs the daemon in-process with the fake LLM and the given
// channels.irc body (JSON5 members), and returns a connected client.
func startGateway(t *testing.T, ircConfig string) (*daemon.Daemon, *client.Client) {
	t.Helper()
	return startGatewayWith(t, ircConfig, "")
}

// startGatewayWith is startGateway with extra top-level config members.
func startGatewayWith(t *testing.T, ircConfig, extra string) (*daemon.Daemon, *client.Client) {
	t.Helper()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	return startGatewayIn(t, t.TempDir(), llm, ircConfig, extra, 0)
}

// startGatewayIn runs the daemon in-process on state directory dir (a
// second call on the same dir is a restart).
func startGatewayIn(t *testing.T, dir string, llm *fakellm.Server, ircConfig, extra string, grace time.Duration) (*daemon.Daemon, *client.Client) {
	t.Helper()
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
  channels: { irc: { %s } },
  %s
}`, token, llm.URL(), ircConfig, extra)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	var out bytes.Buffer
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:           config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:          &port,
		Stdout:        &out,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		ShutdownGrace: grace,
	})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: "ws://" + d.Addrs[0].String(), Token: token})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return d, c
}
