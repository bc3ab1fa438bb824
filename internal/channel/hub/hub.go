// Package hub joins the chat channel connectors (IRC, Telegram) to the
// gateway: an inbound message goes through admission into its routed
// session; a run's reply, an announce posted into a routed session and
// admission's own answers go back out as outbox items the dispatcher
// delivers through the connector. It also owns the per-room tool policy
// (channels.<channel>.groups.<room>.tools).
package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/channel"
	"github.com/switchboardhq/switchboard/internal/channel/irc"
	"github.com/switchboardhq/switchboard/internal/channel/telegram"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// sendTimeout bounds one outbound delivery to a channel (waiting for a
// reconnect included).
const sendTimeout = 2 * time.Minute

// Runner is what the hub follows of the agent runner: its run events
// (agent.Runner).
type Runner interface {
	Subscribe(fn func(agent.Event)) (unsubscribe func())
}

// Admitter is the one admission step inbound messages go through
// (admission.Admitter).
type Admitter interface {
	Accept(ctx context.Context, req admission.Request) (admission.Ticket, error)
}

// connector is a chat channel connector the hub runs.
type connector interface {
	channel.Channel
	Start()
	Close() error
}

// Hub joins the chat channel connectors to the runner: admitted
// inbound messages become runs in their routed sessions, and the replies
// of runs in sessions routed to a channel (and announces posted there)
// go back out through it.
type Hub struct {
	adm     Admitter
	store   store.Store
	agentID string
	mainKey string
	dmScope string
	prompts map[string]string // per-room extra system prompt, by lower-cased room
	log     *slog.Logger
	conns   map[string]connector
	// webhooks are the connectors' webhook endpoints by URL path.
	webhooks map[string]http.Handler
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	unsub    func()
	// kicker asks the outbox dispatcher to deliver a session's items.
	kicker Kicker
	mu     sync.Mutex
	closed bool
}

// New builds the configured connectors (not started) and follows the
// runner's events from now on; nil when no channel is enabled. kicker
// asks the outbox dispatcher to deliver a session's items (register
// Handler with it).
func New(set *settings.Settings, st store.Store, runner Runner, adm Admitter, kicker Kicker, log *slog.Logger) (*Hub, error) {
	if !set.IRC.Enabled && !set.Telegram.Enabled {
		return nil, nil
	}
	h := &Hub{
		adm: adm, store: st, agentID: set.DefaultAgent, mainKey: set.MainKey, dmScope: set.DMScope,
		prompts: map[string]string{}, log: log, conns: map[string]connector{},
		webhooks: map[string]http.Handler{}, kicker: kicker,
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if s := set.IRC; s.Enabled {
		c, err := newIRC(s, h, log)
		if err != nil {
			h.cancel()
			return nil, err
		}
		for room, g := range s.Groups {
			if g.SystemPrompt != "" {
				h.prompts[room] = g.SystemPrompt
			}
		}
		h.conns[irc.Name] = c
	}
	if s := set.Telegram; s.Enabled {
		c, err := newTelegram(s, h, log)
		if err != nil {
			h.cancel()
			return nil, err
		}
		h.conns[telegram.Name] = c
		if c.Webhook() {
			h.webhooks[s.WebhookPath] = c
		}
	}
	h.unsub = runner.Subscribe(h.onEvent)
	return h, nil
}

// newTelegram builds the Telegram connector from channels.telegram.
func newTelegram(s settings.TelegramSettings, h *Hub, log *slog.Logger) (*telegram.Client, error) {
	token := s.BotToken
	if s.TokenFile != "" {
		fi, err := os.Lstat(s.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("hub: channels.telegram.tokenFile: %w", err)
		}
		if !fi.Mode().IsRegular() { // the reference rejects symlinks too
			return nil, fmt.Errorf("hub: channels.telegram.tokenFile: %s is not a regular file", s.TokenFile)
		}
		if token, err = secretOrFile("", s.TokenFile, "channels.telegram.tokenFile"); err != nil {
			return nil, err
		}
	}
	var pats []*regexp.Regexp
	for _, p := range s.MentionPatterns {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("hub: channels.telegram.mentionPatterns: %w", err)
		}
		pats = append(pats, re)
	}
	var group func(g settings.TelegramGroupSettings) telegram.Group
	group = func(g settings.TelegramGroupSettings) telegram.Group {
		out := telegram.Group{Enabled: g.Enabled, RequireMention: g.RequireMention, AllowFrom: g.AllowFrom, GroupPolicy: g.GroupPolicy, SystemPrompt: g.SystemPrompt}
		if len(g.Topics) > 0 {
			out.Topics = map[string]telegram.Group{}
			for id, t := range g.Topics {
				out.Topics[id] = group(t)
			}
		}
		return out
	}
	groups := map[string]telegram.Group{}
	for id, g := range s.Groups {
		groups[id] = group(g)
	}
	c, err := telegram.New(telegram.Config{
		Token: token, APIRoot: s.APIRoot,
		Policy: channel.Policy{DMPolicy: s.DMPolicy, AllowFrom: s.AllowFrom, GroupPolicy: s.GroupPolicy, GroupAllowFrom: s.GroupAllowFrom},
		Groups: groups, MentionPatterns: pats, ChunkLimit: s.TextChunkLimit,
		WebhookURL: s.WebhookURL, WebhookSecret: s.WebhookSecret, Deliver: h, Logger: log,
		BotLoop: channel.LoopConfig{Enabled: s.BotLoop.Enabled, MaxEvents: s.BotLoop.MaxEvents, Window: s.BotLoop.Window, Cooldown: s.BotLoop.Cooldown},
	})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	return c, nil
}

// WebhookHandlers returns the connectors' webhook endpoints by URL path,
// for the gateway's HTTP listener; nil when none.
func (h *Hub) WebhookHandlers() map[string]http.Handler {
	if h == nil {
		return nil
	}
	return h.webhooks
}

// newIRC builds the IRC connector from channels.irc.
func newIRC(s settings.IRCSettings, h *Hub, log *slog.Logger) (*irc.Client, error) {
	password, err := secretOrFile(s.Password, s.PasswordFile, "channels.irc.passwordFile")
	if err != nil {
		return nil, err
	}
	nsPass, err := secretOrFile(s.NickServPassword, s.NickServPasswordFile, "channels.irc.nickserv.passwordFile")
	if err != nil {
		return nil, err
	}
	var pats []*regexp.Regexp
	for _, p := range s.MentionPatterns {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("hub: channels.irc.mentionPatterns: %w", err)
		}
		pats = append(pats, re)
	}
	pol := channel.Policy{
		DMPolicy: s.DMPolicy, AllowFrom: s.AllowFrom, GroupPolicy: s.GroupPolicy, GroupAllowFrom: s.GroupAllowFrom,
		Groups: map[string]channel.Group{}, AllowNameMatching: s.AllowNameMatching,
	}
	loop := func(b settings.BotLoopSettings) channel.LoopConfig {
		return channel.LoopConfig{Enabled: b.Enabled, MaxEvents: b.MaxEvents, Window: b.Window, Cooldown: b.Cooldown}
	}
	rooms := map[string]channel.LoopConfig{}
	for room, g := range s.Groups {
		pol.Groups[room] = channel.Group{Enabled: g.Enabled, RequireMention: g.RequireMention, AllowFrom: g.AllowFrom}
		rooms[room] = loop(g.BotLoop)
	}
	cfg := irc.Config{
		Addr: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), TLS: s.TLS,
		Nick: s.Nick, Username: s.Username, Realname: s.Realname, Password: password, Channels: s.Channels,
		Policy: pol, MentionPatterns: pats, ChunkLimit: s.TextChunkLimit, Deliver: h, Logger: log,
		BotLoop: loop(s.BotLoop), RoomBotLoop: rooms,
	}
	if s.NickServEnabled {
		cfg.NickServ = irc.NickServ{Service: s.NickServService, Password: nsPass, Register: s.NickServRegister, RegisterEmail: s.NickServRegisterEmail}
	}
	c, err := irc.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	return c, nil
}

// secretOrFile returns the inline secret, or the first line of file
// (which must be a regular file).
func secretOrFile(inline, file, key string) (string, error) {
	if file == "" {
		return inline, nil
	}
	v, err := settings.ReadSecretFile(file)
	if err != nil {
		return "", fmt.Errorf("hub: %s: %w", key, err)
	}
	return v, nil
}

// Start starts the connectors (run events are followed from New on).
func (h *Hub) Start() {
	for _, c := range h.conns {
		c.Start()
	}
}

// Close stops the connectors, then the outbound deliveries in flight.
func (h *Hub) Close() {
	for _, c := range h.conns {
		_ = c.Close()
	}
	if h.unsub != nil {
		h.unsub()
	}
	h.mu.Lock()
	h.closed = true // no delivery starts after this
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Status reports the connectors for channels.status.
func (h *Hub) Status() []wire.ChannelStatus {
	if h == nil {
		return nil
	}
	var out []wire.ChannelStatus
	for _, name := range slices.Sorted(maps.Keys(h.conns)) {
		s := h.conns[name].Status()
		out = append(out, wire.ChannelStatus{Channel: name, Accounts: []wire.ChannelAccount{{
			AccountID: s.AccountID, State: s.State, Connected: s.Connected, Running: s.State != "stopped",
			Server: s.Server, Nick: s.Nick, Rooms: s.Rooms, LastError: s.LastError, Reconnects: s.Reconnects,
			ConnectedAtMs: s.ConnectedAtMs, Inbound: s.Inbound, Outbound: s.Outbound,
		}}})
	}
	return out
}

// Deliver implements channel.Deliverer: the message goes through
// admission into its routed session. Admission stores the run with its
// input before it returns, so an accepted message survives a restart. A
// command's reply, and a refusal at the queue cap, go back to the sender
// through the outbox; a message the send policy refuses gets no answer
// (the policy forbids sending to that chat).
func (h *Hub) Deliver(ctx context.Context, in channel.Inbound) error {
	key := channel.SessionKey(h.agentID, h.mainKey, h.dmScope, in)
	route := channel.Route{Channel: in.Channel, AccountID: in.AccountID, To: in.ReplyTo()}
	text := in.Text
	if in.Kind == channel.KindGroup {
		text = in.Label() + ": " + in.Text
	}
	runID := uuid.NewString()
	t, err := h.adm.Accept(ctx, admission.Request{Origin: admission.OriginChannel, Admin: true, Sender: admission.Sender{ID: in.Sender, Name: in.Label()}, Input: agent.Input{
		RunID: runID, SessionKey: key, AgentID: h.agentID, Message: text, IdempotencyKey: runID + ":user",
		Channel: in.Channel, To: route.To, AccountID: in.AccountID,
		ExtraSystemPrompt: cmp.Or(in.SystemPrompt, h.prompts[channel.NormalizeRoom(in.Room)]),
	}})
	var full *admission.QueueFullError
	switch {
	case errors.Is(err, admission.ErrSendDenied):
		h.log.Info("channel: message refused by the send policy", "channel", in.Channel, "session", key)
		return nil
	case errors.As(err, &full):
		t.Reply = full.Error()
	case err != nil:
		return fmt.Errorf("%s inbound: %w", in.Channel, err)
	}
	if t.Reply != "" {
		h.answer(ctx, key, runID, route, t.Reply)
	}
	if _, err := h.store.UpdateSession(ctx, key, false, func(s *store.Session) error {
		s.LastChannel, s.LastTo, s.LastAccountID = route.Channel, route.To, route.AccountID
		s.DeliveryContext = &store.DeliveryContext{Channel: route.Channel, To: route.To, AccountID: route.AccountID}
		return nil
	}); err != nil && !errors.Is(err, store.ErrNotFound) {
		h.log.Warn("channel: could not record the session's route", "session", key, "err", err)
	}
	return nil
}

// onEvent hands what goes out to a chat channel to the outbox: the end
// of a run (whose reply item its OnFinish stored, see onFinish) asks for
// its delivery now; an announce posted into a routed session from another
// session (the agent-to-agent announce step) is stored as an item. Runs
// count when a channel started them or they deliver a sub-agent's
// announce. A person's turn from the Control UI stays there.
func (h *Hub) onEvent(ev agent.Event) {
	if h.ctx.Err() != nil {
		return
	}
	switch {
	case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd && ev.Run != nil:
		h.kick(ev.SessionKey) // any node may deliver the stored item
	case ev.Stream == agent.StreamPost && ev.Message != nil && ev.Message.Provenance != nil && !ev.IsRemote():
		text := ev.Message.Text()
		if silentReply(text) {
			return
		}
		key, postID := ev.SessionKey, ev.RunID
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed {
			return
		}
		h.wg.Go(func() {
			ctx, cancel := context.WithTimeout(h.ctx, sendTimeout)
			defer cancel()
			h.enqueuePost(ctx, key, postID, text)
		})
	}
}

// subagentAnnounceTool is the provenance source tool of a sub-agent
// announce run (package subagent's).
const subagentAnnounceTool = "subagent_announce"

// replies reports whether a run's reply goes out to a channel: its
// stored input came in on one of the hub's channels, or it is a
// sub-agent announce turn. Agent-to-agent steps (sessions_send) reply to
// the sender, not the channel; their announce step arrives as a post.
// It reads the run's durable input, so a run resumed after a restart
// answers too.
func (h *Hub) replies(run *store.Run) bool {
	var in struct {
		Channel    string            `json:"channel"`
		Provenance *agent.Provenance `json:"provenance"`
	}
	if json.Unmarshal(run.Input, &in) != nil {
		return false
	}
	return h.conns[in.Channel] != nil || in.Provenance != nil && in.Provenance.SourceTool == subagentAnnounceTool
}

// route finds where a session's replies go: the route its key names, or
// the one stored on the session (the last inbound message's).
func (h *Hub) route(ctx context.Context, key string) (channel.Route, bool) {
	for name := range h.conns {
		if r, ok := channel.RouteFromKey(name, key); ok {
			return r, true
		}
	}
	s, err := h.store.GetSession(ctx, key)
	if err != nil || s.DeliveryContext == nil || h.conns[s.DeliveryContext.Channel] == nil || s.DeliveryContext.To == "" {
		return channel.Route{}, false
	}
	return channel.Route{Channel: s.DeliveryContext.Channel, AccountID: s.DeliveryContext.AccountID, To: s.DeliveryContext.To}, true
}

// RoomTools returns the tool narrowing of the chat room a session key
// names, as a policy layer: an IRC room's channels.irc.groups.<room>.tools
// (else the "*" entry's), or a Telegram group's or forum topic's
// channels.telegram.groups.<chatId>[.topics.<threadId>].tools (a topic
// without its own takes its group's; "*" entries stand in for missing
// ones). ok is false for other sessions and rooms without one.
func RoomTools(set *settings.Settings, key string) (sel policy.ToolSelection, ok bool) {
	if r, ok := channel.RouteFromKey(telegram.Name, key); ok && strings.Contains(key, ":"+telegram.Name+":group:") {
		return telegramTools(set.Telegram, r.To)
	}
	r, ok := channel.RouteFromKey(irc.Name, key)
	if !ok || !strings.Contains(key, ":"+irc.Name+":group:") {
		return policy.ToolSelection{}, false
	}
	g, ok := set.IRC.Groups[channel.NormalizeRoom(r.To)]
	if !ok || g.Tools == nil {
		g, ok = set.IRC.Groups["*"]
	}
	if !ok || g.Tools == nil {
		return policy.ToolSelection{}, false
	}
	return policy.ToolSelection{Allow: g.Tools.Allow, Deny: g.Tools.Deny}, true
}

// telegramTools resolves the tools of a Telegram room ("<chatId>" or
// "<chatId>:topic:<threadId>").
func telegramTools(s settings.TelegramSettings, room string) (policy.ToolSelection, bool) {
	chat, thread, topic := strings.Cut(room, ":topic:")
	g, ok := s.Groups[chat]
	if !ok {
		g, ok = s.Groups["*"]
	}
	if !ok {
		return policy.ToolSelection{}, false
	}
	tools := g.Tools
	if topic {
		t, ok := g.Topics[thread]
		if !ok || t.Tools == nil {
			t, ok = g.Topics["*"]
		}
		if ok && t.Tools != nil {
			tools = t.Tools
		}
	}
	if tools == nil {
		return policy.ToolSelection{}, false
	}
	return policy.ToolSelection{Allow: tools.Allow, Deny: tools.Deny}, true
}
