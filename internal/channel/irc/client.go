// Package irc is the IRC channel connector (channels.irc): one connection
// to one server that registers, identifies with NickServ, joins the
// configured rooms, keeps the link alive and reconnects with backoff when
// the server drops it. Each PRIVMSG in a joined room or in private passes
// the channel's access gates (package channel) and is handed to a
// Deliverer; replies are split to IRC's line limit and sent through a
// token-bucket flood limiter.
package irc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboardhq/switchboard/internal/channel"
)

// Name is the channel id.
const Name = "irc"

// Defaults.
const (
	DefaultFloodRate  = 2 // lines per second
	DefaultFloodBurst = 5
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 2 * time.Minute
	DefaultKeepalive  = 90 * time.Second
	writeTimeout      = 15 * time.Second
	registerTimeout   = 60 * time.Second
	inboundQueue      = 256
	// hostReserve is what a server's relay prefix ":nick!user@host " may
	// add to our line beyond nick and user.
	hostReserve = 64
)

// Config configures a Client. Addr, Nick and Deliver are required.
type Config struct {
	// Addr is host:port.
	Addr string
	// TLS wraps the connection; TLSConfig defaults to verifying the host.
	TLS       bool
	TLSConfig *tls.Config
	Nick      string
	Username  string
	Realname  string
	Password  string
	// Channels are the rooms to join after registering.
	Channels []string
	// NickServ identifies (and optionally registers) the nick.
	NickServ NickServ
	// Policy holds the access gates; MentionPatterns count as mentions.
	Policy          channel.Policy
	MentionPatterns []*regexp.Regexp
	// ChunkLimit bounds each sent line's text (textChunkLimit); the line
	// limit bounds it further.
	ChunkLimit int
	// Deliver receives admitted messages, one at a time.
	Deliver channel.Deliverer
	// Logger receives the connector's logs; nil discards them.
	Logger *slog.Logger
	// FloodRate and FloodBurst are the outbound token bucket.
	FloodRate  rate.Limit
	FloodBurst int
	// MinBackoff and MaxBackoff bound the reconnect delay.
	MinBackoff, MaxBackoff time.Duration
	// Keepalive is how long a silent link lasts before a PING; twice
	// that without a reply drops it.
	Keepalive time.Duration
	// BotLoop is the bot-pair loop guard for messages from senders the
	// server flags as bots (user mode +B, WHOIS 335): a bot over the
	// budget is dropped until the cooldown ends. RoomBotLoop
	// overrides it per normalised room ("*" for rooms without their own).
	BotLoop     channel.LoopConfig
	RoomBotLoop map[string]channel.LoopConfig
}

// NickServ is the NickServ identification.
type NickServ struct {
	Service, Password string
	Register          bool
	RegisterEmail     string
}

// Client is a running IRC connector. It is safe for concurrent use.
type Client struct {
	cfg     Config
	log     *slog.Logger
	limiter *rate.Limiter
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	inbound chan channel.Inbound
	guards  map[string]*channel.LoopGuard // by room; "" is the channel's

	mu    sync.Mutex
	bots  map[string]botEntry      // WHOIS results by lower-cased nick
	whois map[string]chan struct{} // WHOIS lookups in flight
	conn  *link                    // the registered link, nil when down
	ready chan struct{}            // closed when a link registers; replaced when it drops
	st    channel.Status
}

// link is one connection.
type link struct {
	conn net.Conn
	wmu  sync.Mutex
	nick string
	user string
}

func (l *link) write(line string) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("irc: write: %w", err)
	}
	if _, err := l.conn.Write([]byte(line + "\r\n")); err != nil {
		return fmt.Errorf("irc: write: %w", err)
	}
	return nil
}

func (l *link) send(cmd string, params ...string) error {
	line, err := Format(cmd, params...)
	if err != nil {
		return err
	}
	return l.write(line)
}

// New checks cfg and returns a stopped Client; call Start.
func New(cfg Config) (*Client, error) {
	if cfg.Addr == "" || cfg.Nick == "" || cfg.Deliver == nil {
		return nil, errors.New("irc: Addr, Nick and Deliver are required")
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("irc: address %q: %w", cfg.Addr, err)
	}
	if cfg.Username == "" {
		cfg.Username = cfg.Nick
	}
	if cfg.Realname == "" {
		cfg.Realname = cfg.Nick
	}
	if cfg.FloodRate <= 0 {
		cfg.FloodRate = DefaultFloodRate
	}
	if cfg.FloodBurst <= 0 {
		cfg.FloodBurst = DefaultFloodBurst
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = DefaultKeepalive
	}
	if cfg.NickServ.Service == "" {
		cfg.NickServ.Service = "NickServ"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		cfg: cfg, log: log.With("channel", Name), limiter: rate.NewLimiter(cfg.FloodRate, cfg.FloodBurst),
		ctx: ctx, cancel: cancel, inbound: make(chan channel.Inbound, inboundQueue), ready: make(chan struct{}),
		st:     channel.Status{Channel: Name, AccountID: "default", State: "stopped", Server: cfg.Addr, Nick: cfg.Nick},
		guards: map[string]*channel.LoopGuard{"": channel.NewLoopGuard(cfg.BotLoop)},
		bots:   map[string]botEntry{}, whois: map[string]chan struct{}{},
	}
	for room, lc := range cfg.RoomBotLoop {
		c.guards[channel.NormalizeRoom(room)] = channel.NewLoopGuard(lc)
	}
	return c, nil
}

// Start connects in the background; the client keeps reconnecting until
// Close.
func (c *Client) Start() {
	c.setState(func(s *channel.Status) { s.State = "connecting" })
	connDone := make(chan struct{})
	c.wg.Go(func() {
		defer close(connDone)
		c.connectLoop()
	})
	c.wg.Go(func() { c.deliverLoop(connDone) })
}

// Close disconnects (with QUIT) and waits for the client's goroutines.
func (c *Client) Close() error {
	c.mu.Lock()
	l := c.conn
	c.mu.Unlock()
	if l != nil {
		_ = l.send("QUIT", "shutting down")
	}
	c.cancel()
	c.wg.Wait()
	c.setState(func(s *channel.Status) { s.State, s.Connected, s.ConnectedAtMs, s.Rooms = "stopped", false, 0, nil })
	return nil
}

// Name implements channel.Channel.
func (c *Client) Name() string { return Name }

// Status implements channel.Channel.
func (c *Client) Status() channel.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Rooms = slices.Clone(s.Rooms)
	return s
}

func (c *Client) setState(fn func(*channel.Status)) {
	c.mu.Lock()
	fn(&c.st)
	c.mu.Unlock()
}

// Send implements channel.Channel: text (Markdown) goes to target as
// plain-text PRIVMSG lines, split to the line limit, each line waiting for the flood limiter. When
// the client is between connections it waits for the next one until ctx
// ends. It fails when text has nothing left to send after sanitising.
func (c *Client) Send(ctx context.Context, target, text string) error {
	target = strings.TrimSpace(target)
	if target == "" || strings.ContainsAny(target, " ,\r\n\x00") {
		return fmt.Errorf("irc: bad target %q", target)
	}
	for {
		c.mu.Lock()
		l, ready := c.conn, c.ready
		c.mu.Unlock()
		if l == nil {
			select {
			case <-ready:
				continue
			case <-ctx.Done():
				return fmt.Errorf("irc: send to %s: not connected: %w", target, ctx.Err())
			case <-c.ctx.Done():
				return errors.New("irc: closed")
			}
		}
		lines := channel.Split(channel.PlainText(text), c.lineBudget(l, target))
		if len(lines) == 0 {
			return errors.New("irc: message is empty after sanitising")
		}
		for _, line := range lines {
			if err := c.limiter.Wait(ctx); err != nil {
				return fmt.Errorf("irc: send to %s: %w", target, err)
			}
			if err := l.send("PRIVMSG", target, line); err != nil {
				return err
			}
			c.setState(func(s *channel.Status) { s.Outbound++ })
		}
		return nil
	}
}

// lineBudget is how many bytes of text fit one PRIVMSG to target once the
// server has prefixed our source.
func (c *Client) lineBudget(l *link, target string) int {
	overhead := len(":"+l.nick+"!"+l.user+"@ ") + hostReserve + len("PRIVMSG "+target+" :") + 2
	budget := maxLine - overhead
	if c.cfg.ChunkLimit > 0 {
		budget = min(budget, c.cfg.ChunkLimit)
	}
	return budget
}

// connectLoop connects, runs a session until it ends, and retries with
// exponential backoff and jitter; a link that stayed up a minute resets
// the backoff.
func (c *Client) connectLoop() {
	backoff := c.cfg.MinBackoff
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := c.session()
		if c.ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = c.cfg.MinBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		c.log.Warn("irc: disconnected; reconnecting", "err", err, "in", wait)
		c.setState(func(s *channel.Status) {
			s.State, s.Connected, s.ConnectedAtMs, s.Rooms = "backoff", false, 0, nil
			if err != nil {
				s.LastError = err.Error()
			}
		})
		select {
		case <-time.After(wait):
		case <-c.ctx.Done():
			return
		}
		backoff = min(backoff*2, c.cfg.MaxBackoff)
		c.setState(func(s *channel.Status) { s.State = "connecting"; s.Reconnects++ })
	}
}

func (c *Client) dial() (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if !c.cfg.TLS {
		return d.DialContext(ctx, "tcp", c.cfg.Addr)
	}
	tc := c.cfg.TLSConfig
	if tc == nil {
		host, _, _ := net.SplitHostPort(c.cfg.Addr)
		tc = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	return (&tls.Dialer{NetDialer: d, Config: tc}).DialContext(ctx, "tcp", c.cfg.Addr)
}

// session runs one connection until it fails or the client closes.
func (c *Client) session() error {
	conn, err := c.dial()
	if err != nil {
		return fmt.Errorf("irc: connect %s: %w", c.cfg.Addr, err)
	}
	l := &link{conn: conn, nick: c.cfg.Nick, user: c.cfg.Username}
	stop := context.AfterFunc(c.ctx, func() { conn.Close() })
	defer func() {
		stop()
		conn.Close()
		c.mu.Lock()
		if c.conn == l {
			c.conn = nil
			c.ready = make(chan struct{})
		}
		c.mu.Unlock()
	}()
	if c.cfg.Password != "" {
		if err := l.send("PASS", c.cfg.Password); err != nil {
			return err
		}
	}
	if err := l.send("NICK", l.nick); err != nil {
		return err
	}
	if err := l.send("USER", c.cfg.Username, "0", "*", c.cfg.Realname); err != nil {
		return err
	}
	r := bufio.NewReaderSize(conn, 4096)
	registered, pinged := false, false
	deadline := time.Now().Add(registerTimeout)
	for {
		if registered {
			deadline = time.Now().Add(c.cfg.Keepalive)
		}
		if err := conn.SetReadDeadline(deadline); err != nil {
			return fmt.Errorf("irc: %w", err)
		}
		line, err := readLine(r)
		if err != nil {
			var ne net.Error
			if registered && !pinged && errors.As(err, &ne) && ne.Timeout() {
				pinged = true
				if err := l.send("PING", "keepalive"); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("irc: read: %w", err)
		}
		pinged = false
		m, err := Parse(line)
		if err != nil {
			continue
		}
		switch m.Command {
		case "PING":
			if err := l.send("PONG", m.Param(0)); err != nil {
				return err
			}
		case "001":
			registered = true
			if n := m.Param(0); n != "" {
				l.nick = n
			}
			c.onRegistered(l)
		case "433", "432", "436": // nick in use / erroneous / collision
			if registered {
				continue
			}
			if len(l.nick) >= 30 {
				return fmt.Errorf("irc: nick %q refused: %s", l.nick, m.Param(len(m.Params)-1))
			}
			l.nick += "_"
			if err := l.send("NICK", l.nick); err != nil {
				return err
			}
		case "NICK":
			if strings.EqualFold(m.Nick(), l.nick) {
				l.nick = m.Param(0)
				c.setState(func(s *channel.Status) { s.Nick = l.nick })
			}
		case "JOIN":
			if strings.EqualFold(m.Nick(), l.nick) {
				room := m.Param(0)
				c.setState(func(s *channel.Status) {
					if !slices.Contains(s.Rooms, room) {
						s.Rooms = append(s.Rooms, room)
					}
				})
			}
		case "PART", "KICK":
			who := m.Nick()
			if m.Command == "KICK" {
				who = m.Param(1)
			}
			if strings.EqualFold(who, l.nick) {
				room := m.Param(0)
				c.setState(func(s *channel.Status) {
					s.Rooms = slices.DeleteFunc(s.Rooms, func(r string) bool { return strings.EqualFold(r, room) })
				})
			}
		case "ERROR":
			return fmt.Errorf("irc: server closed the link: %s", m.Param(0))
		case "335": // RPL_WHOISBOT: <me> <nick> :is a bot
			c.whoisResult(m.Param(1), true, false)
		case "318", "401": // end of WHOIS, no such nick
			c.whoisResult(m.Param(1), false, true)
		case "PRIVMSG":
			c.onPrivmsg(l, m)
		}
	}
}

// readLine reads one line, cutting overlong lines at the IRC limit (the
// rest of such a line is discarded).
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if err != nil {
			return "", err
		}
		if len(b) < 8192 {
			b = append(b, chunk...)
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

// onRegistered identifies with NickServ, joins the rooms and marks the
// link ready for Send.
func (c *Client) onRegistered(l *link) {
	ns := c.cfg.NickServ
	if ns.Password != "" {
		if ns.Register && ns.RegisterEmail != "" {
			_ = l.send("PRIVMSG", ns.Service, "REGISTER "+ns.Password+" "+ns.RegisterEmail)
		}
		_ = l.send("PRIVMSG", ns.Service, "IDENTIFY "+ns.Password)
	}
	// Flag ourselves as a bot (user mode +B), so that other bots' loop
	// guards can tell; servers without the mode refuse it harmlessly.
	_ = l.send("MODE", l.nick, "+B")
	for _, room := range c.cfg.Channels {
		if err := l.send("JOIN", room); err != nil {
			c.log.Warn("irc: join failed", "room", room, "err", err)
		}
	}
	c.mu.Lock()
	c.conn = l
	close(c.ready)
	c.st.State, c.st.Connected, c.st.Nick, c.st.ConnectedAtMs = "connected", true, l.nick, time.Now().UnixMilli()
	c.st.LastError = ""
	c.mu.Unlock()
	c.log.Info("irc: connected", "server", c.cfg.Addr, "nick", l.nick)
}

// onPrivmsg turns a PRIVMSG into an Inbound, applies the gates and queues
// it for delivery.
func (c *Client) onPrivmsg(l *link, m Message) {
	target, text := m.Param(0), m.Param(1)
	nick := m.Nick()
	if nick == "" || strings.EqualFold(nick, l.nick) || strings.HasPrefix(text, "\x01") {
		return // our own echo, a server notice, or CTCP
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	in := channel.Inbound{Channel: Name, AccountID: "default", Sender: m.Prefix, SenderName: nick, Text: text, Kind: channel.KindDirect}
	if target != "" && strings.IndexByte("#&+!", target[0]) >= 0 {
		in.Kind, in.Room = channel.KindGroup, target
		in.Mentioned = channel.Mentioned(text, l.nick, c.cfg.MentionPatterns)
	}
	if d := channel.Admit(c.cfg.Policy, in); !d.Allow {
		c.log.Info("irc: drop", "from", in.Sender, "room", in.Room, "reason", d.Reason)
		return
	}
	c.setState(func(s *channel.Status) { s.Inbound++ })
	select {
	case c.inbound <- in:
	default:
		c.log.Warn("irc: inbound queue full; message dropped", "from", in.Sender, "room", in.Room)
	}
}

// deliverLoop hands admitted messages to the Deliverer in arrival order.
// On Close it waits for the connection to end, then delivers what is
// still queued, so a message the connector accepted is not dropped by a
// restart of the connector.
func (c *Client) deliverLoop(connDone <-chan struct{}) {
	for {
		select {
		case <-c.ctx.Done():
			<-connDone
			for {
				select {
				case in := <-c.inbound:
					c.deliver(in, false)
				default:
					return
				}
			}
		case in := <-c.inbound:
			c.deliver(in, true)
		}
	}
}

// deliver passes one message to the Deliverer; a delivery already begun
// is not cut short by Close. guard applies the bot-loop guard (skipped
// while draining: the lookup needs the link).
func (c *Client) deliver(in channel.Inbound, guard bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 30*time.Second)
	defer cancel()
	if guard && c.loopSuppressed(ctx, in) {
		c.log.Info("irc: drop", "from", in.Sender, "room", in.Room, "reason", "bot-loop")
		return
	}
	if err := c.cfg.Deliver.Deliver(ctx, in); err != nil {
		c.log.Error("irc: inbound message not accepted", "from", in.Sender, "room", in.Room, "err", err)
	}
}

// botEntry is a cached WHOIS answer.
type botEntry struct {
	bot bool
	at  time.Time
}

// botTTL is how long a WHOIS answer is trusted.
const botTTL = 10 * time.Minute

// whoisTimeout bounds one WHOIS lookup.
const whoisTimeout = 3 * time.Second

// whoisResult records a WHOIS answer: bot marks the nick a bot; done
// ends the lookup (a nick without a 335 line is not a bot).
func (c *Client) whoisResult(nick string, bot, done bool) {
	key := strings.ToLower(nick)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.bots[key]
	if bot {
		e.bot = true
	}
	e.at = time.Now()
	c.bots[key] = e
	if ch := c.whois[key]; done && ch != nil {
		close(ch)
		delete(c.whois, key)
	}
}

// isBot reports whether the server flags nick as a bot, asking WHOIS
// when the cached answer is missing or stale. A failed lookup counts as
// not a bot.
func (c *Client) isBot(ctx context.Context, nick string) bool {
	key := strings.ToLower(nick)
	c.mu.Lock()
	if e, ok := c.bots[key]; ok && time.Since(e.at) < botTTL && c.whois[key] == nil {
		c.mu.Unlock()
		return e.bot
	}
	ch := c.whois[key]
	l := c.conn
	if ch == nil {
		ch = make(chan struct{})
		c.whois[key] = ch
		delete(c.bots, key)
		if l == nil || l.send("WHOIS", nick) != nil {
			delete(c.whois, key)
			c.mu.Unlock()
			return false
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, whoisTimeout)
	defer cancel()
	select {
	case <-ch:
	case <-ctx.Done():
		c.mu.Lock()
		if c.whois[key] == ch {
			delete(c.whois, key)
		}
		c.mu.Unlock()
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bots[key].bot
}

// loopSuppressed applies the bot-pair loop guard: every admitted message
// counts against the pair (sender, us) in its conversation, and only a
// pair over budget asks whether the sender is a bot (WHOIS, cached), so
// a person is never suppressed and the lookup costs nothing in ordinary
// traffic.
func (c *Client) loopSuppressed(ctx context.Context, in channel.Inbound) bool {
	room := channel.NormalizeRoom(in.Room)
	g, ok := c.guards[room]
	if !ok && room != "" {
		g, ok = c.guards["*"]
	}
	if !ok {
		g = c.guards[""]
	}
	if !g.Enabled() {
		return false
	}
	c.mu.Lock()
	me := c.st.Nick
	c.mu.Unlock()
	scope := "dm:" + strings.ToLower(in.SenderName)
	if room != "" {
		scope = "room:" + room
	}
	if g.Allow(scope, strings.ToLower(in.SenderName), strings.ToLower(me), time.Now()) {
		return false
	}
	return c.isBot(ctx, in.SenderName)
}
