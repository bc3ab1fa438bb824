package irc

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel"
)

// fakeServer accepts connections and records the lines each one sends;
// script answers lines (return the lines to write back).
type fakeServer struct {
	t      *testing.T
	ln     net.Listener
	script func(line string) []string
	mu     sync.Mutex
	lines  []string
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newFakeServer(t *testing.T, script func(line string) []string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveFake(t, ln, script)
}

func serveFake(t *testing.T, ln net.Listener, script func(line string) []string) *fakeServer {
	t.Helper()
	s := &fakeServer{t: t, ln: ln, script: script}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					line = strings.TrimRight(line, "\r\n")
					s.mu.Lock()
					s.lines = append(s.lines, line)
					s.mu.Unlock()
					for _, out := range s.script(line) {
						_, _ = c.Write([]byte(out + "\r\n"))
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

func (s *fakeServer) waitFor(t *testing.T, pred func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !pred(s.sent()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out; server saw %q", s.sent())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s.sent()
}

type nopDeliver struct{}

func (nopDeliver) Deliver(context.Context, channel.Inbound) error { return nil }

// welcomer registers any NICK except the taken ones.
func welcomer(taken ...string) func(string) []string {
	return func(line string) []string {
		m, _ := Parse(line)
		if m.Command == "NICK" {
			for _, n := range taken {
				if m.Param(0) == n {
					return []string{":srv 433 * " + n + " :Nickname is already in use"}
				}
			}
			return []string{":srv 001 " + m.Param(0) + " :Welcome"}
		}
		return nil
	}
}

func startClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.Deliver == nil {
		cfg.Deliver = nopDeliver{}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestNickInUseFallsBackAndJoins(t *testing.T) {
	srv := newFakeServer(t, welcomer("bot"))
	c := startClient(t, Config{Addr: srv.ln.Addr().String(), Nick: "bot", Channels: []string{"#a", "#b"},
		Password: "srvpass", NickServ: NickServ{Password: "nspass"}})
	got := srv.waitFor(t, func(l []string) bool { return len(l) >= 8 })
	want := []string{"PASS :srvpass", "NICK :bot", "USER bot 0 * :bot", "NICK :bot_",
		"PRIVMSG NickServ :IDENTIFY nspass", "MODE bot_ :+B", "JOIN :#a", "JOIN :#b"}
	if strings.Join(got[:8], "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines = %q, want %q", got, want)
	}
	if s := c.Status(); s.Nick != "bot_" || !s.Connected {
		t.Errorf("status = %+v", s)
	}
}

func TestSendSplitsAndRespectsFloodLimit(t *testing.T) {
	srv := newFakeServer(t, welcomer())
	c := startClient(t, Config{Addr: srv.ln.Addr().String(), Nick: "bot", FloodRate: 20, FloodBurst: 2, ChunkLimit: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	// 6 lines of at most 10 bytes; burst 2 then 20/s: >= 4 waits of 50ms.
	if err := c.Send(ctx, "#room", "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll"); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 180*time.Millisecond {
		t.Errorf("6 lines took %s; the flood limit was not applied", el)
	}
	var msgs []string
	for _, l := range srv.waitFor(t, func(l []string) bool { return len(l) >= 9 }) {
		if strings.HasPrefix(l, "PRIVMSG #room :") {
			msgs = append(msgs, strings.TrimPrefix(l, "PRIVMSG #room :"))
		}
	}
	if strings.Join(msgs, "|") != "aaaa bbbb|cccc dddd|eeee ffff|gggg hhhh|iiii jjjj|kkkk llll" {
		t.Errorf("lines = %q", msgs)
	}
	for _, bad := range []string{"", "#a b", "x\r\nQUIT"} {
		if err := c.Send(ctx, bad, "hi"); err == nil {
			t.Errorf("Send to %q succeeded", bad)
		}
	}
	if err := c.Send(ctx, "#room", "\x00\x01 \r\n"); err == nil {
		t.Error("empty after sanitising succeeded")
	}
}

func TestSendWaitsForConnection(t *testing.T) {
	c, err := New(Config{Addr: "127.0.0.1:1", Nick: "bot", Deliver: nopDeliver{}, MinBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.Send(ctx, "#room", "hi"); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("Send while down = %v", err)
	}
	if s := c.Status(); s.Connected || s.LastError == "" {
		t.Errorf("status = %+v", s)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Addr: "nohost", Nick: "n", Deliver: nopDeliver{}}, {Addr: "h:1", Deliver: nopDeliver{}}, {Addr: "h:1", Nick: "n"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestLineBudget(t *testing.T) {
	c, _ := New(Config{Addr: "h:1", Nick: "n", Deliver: nopDeliver{}})
	l := &link{nick: strings.Repeat("n", 30), user: strings.Repeat("u", 10)}
	target := "#" + strings.Repeat("r", 49)
	b := c.lineBudget(l, target)
	if full := len(":"+l.nick+"!"+l.user+"@"+strings.Repeat("h", hostReserve)+" PRIVMSG "+target+" :") + b + 2; full > maxLine {
		t.Errorf("budget %d gives a %d-byte relayed line", b, full)
	}
}

func TestLoopGuardAsksWhoisOnlyOverBudget(t *testing.T) {
	welcome := welcomer()
	srv := newFakeServer(t, func(line string) []string {
		m, _ := Parse(line)
		if m.Command == "WHOIS" {
			out := []string{}
			if m.Param(0) == "otherbot" {
				out = append(out, ":srv 335 bot otherbot :is an IRC Bot")
			}
			return append(out, ":srv 318 bot "+m.Param(0)+" :End of WHOIS list")
		}
		return welcome(line)
	})
	lc := channel.LoopConfig{Enabled: true, MaxEvents: 2, Window: time.Minute, Cooldown: time.Minute}
	c := startClient(t, Config{Addr: srv.ln.Addr().String(), Nick: "bot", BotLoop: lc,
		RoomBotLoop: map[string]channel.LoopConfig{"#free": {Enabled: false}}})
	srv.waitFor(t, func(l []string) bool { return len(l) >= 3 }) // registered and flagged +B
	for !c.Status().Connected {
		time.Sleep(5 * time.Millisecond)
	}
	ctx := context.Background()
	msg := func(nick, room string) channel.Inbound {
		return channel.Inbound{Channel: Name, Kind: channel.KindGroup, Room: room, SenderName: nick, Sender: nick + "!u@h"}
	}
	var got []bool
	for range 4 {
		got = append(got, c.loopSuppressed(ctx, msg("otherbot", "#room")), c.loopSuppressed(ctx, msg("person", "#room")),
			c.loopSuppressed(ctx, msg("otherbot", "#free")))
	}
	want := []bool{false, false, false, false, false, false, true, false, false, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("suppressed = %v, want %v", got, want)
		}
	}
	whois := 0
	for _, l := range srv.sent() {
		if strings.HasPrefix(l, "WHOIS") {
			whois++
		}
	}
	if whois != 2 { // once per nick over budget, then cached
		t.Errorf("WHOIS sent %d times, want 2: %q", whois, srv.sent())
	}
}

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "irc.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveFake(t, ln, welcomer())
	c := startClient(t, Config{Addr: ln.Addr().String(), Nick: "bot", TLS: true,
		TLSConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}})
	srv.waitFor(t, func(l []string) bool { return len(l) >= 2 && l[0] == "NICK :bot" })
	for deadline := time.Now().Add(5 * time.Second); !c.Status().Connected; {
		if time.Now().After(deadline) {
			t.Fatalf("not connected over TLS: %+v", c.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A server the client does not trust is refused.
	untrusted := startClient(t, Config{Addr: ln.Addr().String(), Nick: "bot2", TLS: true, MinBackoff: time.Hour})
	for deadline := time.Now().Add(5 * time.Second); untrusted.Status().LastError == ""; {
		if time.Now().After(deadline) {
			t.Fatal("no error from an untrusted server")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := untrusted.Status(); s.Connected || !strings.Contains(s.LastError, "certificate") {
		t.Errorf("untrusted = %+v", s)
	}
}

// gatedDeliver records deliveries; the first blocks until release closes.
type gatedDeliver struct {
	mu      sync.Mutex
	got     []string
	first   chan struct{}
	release chan struct{}
}

func (d *gatedDeliver) Deliver(ctx context.Context, in channel.Inbound) error {
	d.mu.Lock()
	n := len(d.got)
	d.got = append(d.got, in.Text)
	d.mu.Unlock()
	if n == 0 {
		close(d.first)
		<-d.release
	}
	return nil
}

func TestCloseDeliversWhatWasAccepted(t *testing.T) {
	srv := newFakeServer(t, func(line string) []string {
		m, _ := Parse(line)
		if m.Command != "NICK" {
			return nil
		}
		out := []string{":srv 001 bot :Welcome"}
		for i := range 5 {
			out = append(out, ":alice!a@h PRIVMSG bot :msg "+string(rune('0'+i)))
		}
		return out
	})
	d := &gatedDeliver{first: make(chan struct{}), release: make(chan struct{})}
	c, err := New(Config{Addr: srv.ln.Addr().String(), Nick: "bot", Deliver: d, Policy: channel.Policy{DMPolicy: channel.DMPolicyOpen}})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	<-d.first
	for c.Status().Inbound < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	time.Sleep(50 * time.Millisecond)
	close(d.release)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if strings.Join(d.got, ",") != "msg 0,msg 1,msg 2,msg 3,msg 4" {
		t.Errorf("delivered = %q, want all five in order", d.got)
	}
}

func TestSendRendersMarkdownAsPlainText(t *testing.T) {
	srv := newFakeServer(t, welcomer())
	c := startClient(t, Config{Addr: srv.ln.Addr().String(), Nick: "bot"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Send(ctx, "#md", "**done**: see [docs](https://x.test)\n```\ncode *here*\n```"); err != nil {
		t.Fatal(err)
	}
	var md []string
	for _, l := range srv.waitFor(t, func(l []string) bool { return len(l) >= 5 }) {
		if strings.HasPrefix(l, "PRIVMSG #md :") {
			md = append(md, strings.TrimPrefix(l, "PRIVMSG #md :"))
		}
	}
	if strings.Join(md, "|") != "done: see docs (https://x.test)|code *here*" {
		t.Errorf("lines = %q", md)
	}
}
