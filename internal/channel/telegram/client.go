// Package telegram is the Telegram chat channel connector
// (channels.telegram): one bot that learns its identity with getMe and
// then receives updates by long polling (getUpdates with an offset, in one
// owned goroutine that backs off on errors) or, in webhook mode, through
// an http.Handler the gateway mounts on its own listener (setWebhook with
// a secret token checked on every POST). Each message passes the
// channel's access gates (package channel) and is handed to a Deliverer;
// DMs, groups and forum topics map to rooms as the reference's session
// keys have them. Replies are split at Telegram's message limit. The Bot
// API is reached through github.com/go-telegram-bot-api/telegram-bot-api
// at a configurable API root; the bot token never reaches a log or an
// error. The daemon imports it; it imports only package channel.
package telegram

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboardhq/switchboard/internal/channel"
)

// Name is the channel id.
const Name = "telegram"

// Defaults.
const (
	DefaultAPIRoot     = "https://api.telegram.org"
	DefaultPollTimeout = 30 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = time.Minute
	// MaxMessage is sendMessage's text limit (UTF-16 code units).
	MaxMessage = 4096
	// SecretHeader carries the webhook's secret token.
	SecretHeader   = "X-Telegram-Bot-Api-Secret-Token"
	deliverTimeout = 30 * time.Second
	maxBody        = 1 << 20
	sendAttempts   = 4
	dedupeSize     = 1024
)

// Config configures a Client. Token and Deliver are required.
type Config struct {
	// Token is the bot token from BotFather.
	Token string
	// APIRoot is the Bot API root, without "/bot<TOKEN>".
	APIRoot string
	// HTTPClient sends the Bot API requests; nil uses one whose timeout
	// fits the long poll.
	HTTPClient *http.Client
	// Policy holds the DM gates and the channel's group policy and
	// sender lists (its Groups are built per message from Groups).
	Policy channel.Policy
	// Groups are the per-chat settings by chat id, "*" for chats without
	// their own; their Topics by thread id or "*".
	Groups map[string]Group
	// MentionPatterns count as mentions in groups.
	MentionPatterns []*regexp.Regexp
	// ChunkLimit bounds each sent message; at most MaxMessage.
	ChunkLimit int
	// WebhookURL switches to webhook mode (setWebhook with
	// WebhookSecret); the gateway must route its POSTs to the Client.
	WebhookURL, WebhookSecret string
	// Deliver receives admitted messages, one at a time.
	Deliver channel.Deliverer
	// Logger receives the connector's logs; nil discards them.
	Logger *slog.Logger
	// PollTimeout is getUpdates' long-poll timeout.
	PollTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay after a failed request.
	MinBackoff, MaxBackoff time.Duration
	// BotLoop limits messages from other bots (from.is_bot) per chat.
	BotLoop channel.LoopConfig
}

// Group is one chat's (or forum topic's) settings; unset fields of a
// topic inherit the chat's.
type Group struct {
	// Enabled false drops the chat's messages.
	Enabled *bool
	// RequireMention defaults to true.
	RequireMention *bool
	// AllowFrom overrides the policy's GroupAllowFrom.
	AllowFrom []string
	// GroupPolicy overrides the policy's GroupPolicy.
	GroupPolicy string
	// SystemPrompt is the chat's extra system prompt.
	SystemPrompt string
	// Topics are the forum topics' settings (a chat's only).
	Topics map[string]Group
}

// Client is a running Telegram connector. It is safe for concurrent use.
type Client struct {
	cfg    Config
	bot    *tgbotapi.BotAPI
	log    *slog.Logger
	guard  *channel.LoopGuard
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	// dmu serialises deliveries, so messages reach the Deliverer in
	// order whichever transport brings them.
	dmu sync.Mutex
	// dclosed is set under dmu by Close: a webhook update that arrives
	// after it is refused (Telegram resends it), never delivered to a
	// gateway that is shutting down.
	dclosed bool

	mu    sync.Mutex // guards the fields that follow
	self  Self
	ready bool // getMe answered (and the webhook is set in webhook mode)
	seen  map[int64]bool
	ring  []int64
	st    channel.Status
}

// New checks cfg and returns a stopped Client; call Start.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.Token) == "" || cfg.Deliver == nil {
		return nil, errors.New("telegram: Token and Deliver are required")
	}
	if cfg.WebhookURL != "" && cfg.WebhookSecret == "" {
		return nil, errors.New("telegram: webhook mode needs a secret")
	}
	cfg.APIRoot = strings.TrimRight(cmp.Or(strings.TrimSpace(cfg.APIRoot), DefaultAPIRoot), "/")
	root, err := url.Parse(cfg.APIRoot)
	if err != nil || root.Host == "" || root.Scheme != "http" && root.Scheme != "https" {
		return nil, fmt.Errorf("telegram: API root %q is not an http(s) URL", cfg.APIRoot)
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.ChunkLimit <= 0 || cfg.ChunkLimit > MaxMessage {
		cfg.ChunkLimit = MaxMessage
	}
	cfg.Policy.AllowFrom = NormalizeAllow(cfg.Policy.AllowFrom)
	cfg.Policy.GroupAllowFrom = NormalizeAllow(cfg.Policy.GroupAllowFrom)
	// Telegram allowlists hold numeric user ids, which are what the
	// connector puts in SenderName; they never change, so matching them
	// is not the name matching the reference warns about.
	cfg.Policy.AllowNameMatching = true
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.PollTimeout + 30*time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	bot := &tgbotapi.BotAPI{Token: cfg.Token, Client: &apiClient{ctx: ctx, hc: hc, token: cfg.Token}, Buffer: 100}
	bot.SetAPIEndpoint(strings.ReplaceAll(cfg.APIRoot, "%", "%%") + "/bot%s/%s")
	return &Client{
		cfg: cfg, bot: bot, log: log.With("channel", Name), guard: channel.NewLoopGuard(cfg.BotLoop),
		ctx: ctx, cancel: cancel, seen: map[int64]bool{},
		st: channel.Status{Channel: Name, AccountID: "default", State: "stopped", Server: root.Host},
	}, nil
}

// apiClient is the library's HTTPClient: requests end when the Client
// closes, and errors lose the token (a url.Error quotes the request URL,
// which holds it).
type apiClient struct {
	ctx   context.Context
	hc    *http.Client
	token string
}

func (c *apiClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req.WithContext(c.ctx))
	if err != nil {
		return nil, redactedError{msg: strings.ReplaceAll(err.Error(), c.token, "<token>"), err: c.ctx.Err()}
	}
	return resp, nil
}

// redactedError is a transport error with the token taken out; it wraps
// context.Canceled when the Client closed.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// Start runs the transport in the background until Close.
func (c *Client) Start() {
	c.setState(func(s *channel.Status) { s.State = "connecting" })
	c.wg.Go(c.run)
}

// Close stops polling (an in-flight getUpdates is cancelled) and waits
// for the connector's goroutines; a delivery already begun completes. A
// webhook registration is left in place, so Telegram keeps the updates
// that arrive while the gateway is down and resends them. A second call
// returns an error.
func (c *Client) Close() error {
	err := errClosed
	c.once.Do(func() {
		err = nil
		c.cancel()
		c.wg.Wait()
		c.dmu.Lock() // waits for a webhook delivery in flight
		c.dclosed = true
		c.dmu.Unlock()
		c.setState(func(s *channel.Status) { s.State, s.Connected, s.ConnectedAtMs = "stopped", false, 0 })
	})
	return err
}

var errClosed = errors.New("telegram: closed")

// Name implements channel.Channel.
func (c *Client) Name() string { return Name }

// Status implements channel.Channel.
func (c *Client) Status() channel.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *Client) setState(fn func(*channel.Status)) {
	c.mu.Lock()
	fn(&c.st)
	c.mu.Unlock()
}

// Webhook reports whether the Client runs in webhook mode.
func (c *Client) Webhook() bool { return c.cfg.WebhookURL != "" }

// run learns the bot's identity, sets up the transport and, for long
// polling, polls until Close; every failure backs off (exponential, with
// jitter), so a dead API is never busy-looped.
func (c *Client) run() {
	backoff := c.cfg.MinBackoff
	fail := func(err error) bool {
		wait := backoff/2 + rand.N(backoff/2+1)
		c.log.Warn("telegram: request failed; retrying", "err", err, "in", wait)
		c.setState(func(s *channel.Status) {
			if s.Connected {
				s.Reconnects++
			}
			s.State, s.Connected, s.ConnectedAtMs, s.LastError = "backoff", false, 0, err.Error()
		})
		backoff = min(backoff*2, c.cfg.MaxBackoff)
		select {
		case <-time.After(wait):
			return true
		case <-c.ctx.Done():
			return false
		}
	}
	for c.ctx.Err() == nil {
		if err := c.setup(); err != nil {
			if c.ctx.Err() != nil || !fail(err) {
				return
			}
			continue
		}
		backoff = c.cfg.MinBackoff
		c.connected()
		if c.Webhook() {
			<-c.ctx.Done()
			return
		}
		c.poll(fail, func() { backoff = c.cfg.MinBackoff })
	}
}

// setup calls getMe, then removes any webhook (long polling, which
// Telegram refuses while one is set) or registers ours.
func (c *Client) setup() error {
	me, err := c.bot.GetMe()
	if err != nil {
		return fmt.Errorf("telegram: getMe: %w", err)
	}
	c.mu.Lock()
	c.self = Self{ID: me.ID, Username: me.UserName}
	c.st.Nick = "@" + me.UserName
	c.mu.Unlock()
	if c.Webhook() {
		_, err = c.bot.MakeRequest("setWebhook", tgbotapi.Params{
			"url": c.cfg.WebhookURL, "secret_token": c.cfg.WebhookSecret, "allowed_updates": `["message"]`,
		})
		if err != nil {
			return fmt.Errorf("telegram: setWebhook: %w", err)
		}
		return nil
	}
	if _, err := c.bot.MakeRequest("deleteWebhook", nil); err != nil {
		return fmt.Errorf("telegram: deleteWebhook: %w", err)
	}
	return nil
}

func (c *Client) connected() {
	c.mu.Lock()
	c.ready = true
	c.st.State, c.st.Connected, c.st.ConnectedAtMs, c.st.LastError = "connected", true, time.Now().UnixMilli(), ""
	me := c.self
	c.mu.Unlock()
	mode := "polling"
	if c.Webhook() {
		mode = "webhook"
	}
	c.log.Info("telegram: connected", "bot", "@"+me.Username, "mode", mode)
}

// poll runs getUpdates until Close, handing each update over before the
// offset moves past it. fail backs off after an error (false: closed);
// ok resets the backoff after a success.
func (c *Client) poll(fail func(error) bool, ok func()) {
	var offset int64
	for c.ctx.Err() == nil {
		raws, err := c.getUpdates(offset)
		if err != nil {
			if c.ctx.Err() != nil || !fail(err) {
				return
			}
			continue
		}
		ok()
		if !c.Status().Connected {
			c.connected()
		}
		for _, raw := range raws {
			u, err := ParseUpdate(raw)
			if err != nil {
				var id struct {
					UpdateID int64 `json:"update_id"`
				}
				_ = json.Unmarshal(raw, &id)
				u = Update{UpdateID: id.UpdateID}
				c.log.Warn("telegram: unreadable update skipped", "update", id.UpdateID, "err", err)
			}
			offset = max(offset, u.UpdateID+1)
			_ = c.handle(u)
		}
	}
}

func (c *Client) getUpdates(offset int64) ([]json.RawMessage, error) {
	p := tgbotapi.Params{"timeout": strconv.Itoa(int(c.cfg.PollTimeout / time.Second)), "allowed_updates": `["message"]`}
	if offset > 0 {
		p["offset"] = strconv.FormatInt(offset, 10)
	}
	resp, err := c.bot.MakeRequest("getUpdates", p)
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(resp.Result, &raws); err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", err)
	}
	return raws, nil
}

// errNotDelivered is a message the Deliverer refused.
var errNotDelivered = errors.New("telegram: inbound message not accepted")

// handle gates one update and delivers it; it fails only when the
// Deliverer refused an admitted message.
func (c *Client) handle(u Update) error {
	c.mu.Lock()
	me := c.self
	dup := c.seen[u.UpdateID]
	if !dup && u.UpdateID != 0 {
		c.seen[u.UpdateID] = true
		c.ring = append(c.ring, u.UpdateID)
		if len(c.ring) > dedupeSize {
			delete(c.seen, c.ring[0])
			c.ring = c.ring[1:]
		}
	}
	c.mu.Unlock()
	if dup {
		return nil
	}
	in, err := ToInbound(me, u, c.cfg.MentionPatterns)
	if err != nil {
		return nil
	}
	pol, prompt := c.policyFor(in, u.Message)
	if d := channel.Admit(pol, in); !d.Allow {
		c.log.Info("telegram: drop", "from", in.Sender, "room", in.Room, "reason", d.Reason)
		return nil
	}
	in.SystemPrompt = prompt
	if u.Message.From.IsBot {
		scope := "dm:" + in.Sender
		if in.Room != "" {
			scope = "room:" + in.Room
		}
		if !c.guard.Allow(scope, in.Sender, strconv.FormatInt(me.ID, 10), time.Now()) {
			c.log.Info("telegram: drop", "from", in.Sender, "room", in.Room, "reason", "bot-loop")
			return nil
		}
	}
	c.setState(func(s *channel.Status) { s.Inbound++ })
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.dclosed {
		return fmt.Errorf("%w: %w", errNotDelivered, errClosed)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), deliverTimeout)
	defer cancel()
	if err := c.cfg.Deliver.Deliver(ctx, in); err != nil {
		c.log.Error("telegram: inbound message not accepted", "from", in.Sender, "room", in.Room, "err", err)
		return fmt.Errorf("%w: %w", errNotDelivered, err)
	}
	return nil
}

// policyFor resolves the gates for one message: for a group, its chat's
// settings (or "*"'s) with its topic's (or the chat's "*" topic's) laid
// over them, as one room entry of the policy; and the system prompt.
func (c *Client) policyFor(in channel.Inbound, m *Message) (channel.Policy, string) {
	p := c.cfg.Policy
	p.Groups = nil
	if in.Kind != channel.KindGroup {
		return p, ""
	}
	chat := strconv.FormatInt(m.Chat.ID, 10)
	g, own := c.cfg.Groups[chat]
	if !own {
		g, own = c.cfg.Groups["*"]
	}
	if own && m.Chat.IsForum {
		thread := strconv.FormatInt(generalTopic, 10)
		if m.IsTopicMessage && m.MessageThreadID > 0 {
			thread = strconv.FormatInt(m.MessageThreadID, 10)
		}
		t, ok := g.Topics[thread]
		if !ok {
			t, ok = g.Topics["*"]
		}
		if ok {
			g = layer(g, t)
		}
	}
	if !own {
		return p, ""
	}
	p.GroupPolicy = cmp.Or(g.GroupPolicy, p.GroupPolicy)
	p.Groups = map[string]channel.Group{channel.NormalizeRoom(in.Room): {
		Enabled: g.Enabled, RequireMention: g.RequireMention, AllowFrom: NormalizeAllow(g.AllowFrom),
	}}
	return p, g.SystemPrompt
}

// layer lays a topic's set fields over its chat's.
func layer(g, t Group) Group {
	if t.Enabled != nil {
		g.Enabled = t.Enabled
	}
	if t.RequireMention != nil {
		g.RequireMention = t.RequireMention
	}
	if t.AllowFrom != nil {
		g.AllowFrom = t.AllowFrom
	}
	g.GroupPolicy = cmp.Or(t.GroupPolicy, g.GroupPolicy)
	g.SystemPrompt = cmp.Or(t.SystemPrompt, g.SystemPrompt)
	g.Topics = nil
	return g
}

// ServeHTTP is the webhook endpoint: a POST whose secret token header
// matches gets its update gated and delivered before the 200 (so an
// update Telegram saw acknowledged is stored); a wrong or missing secret
// gets 401, and an update arriving before the bot knows itself 503, which
// Telegram retries.
func (c *Client) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := r.Header.Get(SecretHeader)
	if !c.Webhook() || subtle.ConstantTimeCompare([]byte(got), []byte(c.cfg.WebhookSecret)) != 1 {
		// Debug, not Warn: a flood of misses would flood the log; the
		// gateway's lockout logs once per window.
		c.log.Debug("telegram: webhook request with a wrong secret token", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	if !ready || c.ctx.Err() != nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(raw) > maxBody {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	u, err := ParseUpdate(raw)
	if err != nil {
		http.Error(w, "bad update", http.StatusBadRequest)
		return
	}
	if err := c.handle(u); err != nil {
		http.Error(w, "not accepted", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Send implements channel.Channel: text (Markdown, sent as plain text)
// goes to target ("<chatId>" or "<chatId>:topic:<threadId>") in messages
// of at most the chunk limit, in order. A 429 waits the retry_after
// Telegram asks for and a transport error backs off, a few times each.
func (c *Client) Send(ctx context.Context, target, text string) error {
	t, err := ParseTarget(target)
	if err != nil {
		return err
	}
	chunks := channel.Chunk(channel.PlainText(text), c.cfg.ChunkLimit)
	if len(chunks) == 0 {
		return errors.New("telegram: message is empty")
	}
	for _, chunk := range chunks {
		p := tgbotapi.Params{"chat_id": t.ChatID, "text": chunk}
		if t.Thread > generalTopic {
			p["message_thread_id"] = strconv.FormatInt(t.Thread, 10)
		}
		if err := c.sendOne(ctx, p); err != nil {
			return fmt.Errorf("telegram: send to %s: %w", target, err)
		}
		c.setState(func(s *channel.Status) { s.Outbound++ })
	}
	return nil
}

func (c *Client) sendOne(ctx context.Context, p tgbotapi.Params) error {
	backoff := c.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		_, err := c.bot.MakeRequest("sendMessage", p)
		if err == nil {
			return nil
		}
		var apiErr *tgbotapi.Error
		wait := backoff
		switch {
		case errors.As(err, &apiErr) && apiErr.RetryAfter > 0:
			wait = time.Duration(apiErr.RetryAfter) * time.Second
		case errors.As(err, &apiErr):
			return fmt.Errorf("sendMessage: %w", err) // the API refused it; retrying will not help
		}
		if attempt >= sendAttempts || c.ctx.Err() != nil {
			return fmt.Errorf("sendMessage: %w", err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("sendMessage: %w (then %w)", err, ctx.Err())
		case <-c.ctx.Done():
			return errClosed
		}
		backoff = min(backoff*2, c.cfg.MaxBackoff)
	}
}
