package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/channel"
)

// The Bot API shapes the connector reads, from the official reference
// (core.telegram.org/bots/api). The library's own Update predates forum
// topics (Bot API 6.3: message_thread_id, is_topic_message, is_forum), so
// updates are decoded here; only the fields the connector uses are kept.

// Update is one incoming update.
type Update struct {
	// UpdateID orders updates; getUpdates' offset is the last one + 1.
	UpdateID int64 `json:"update_id"`
	// Message is a new message; other update kinds are ignored.
	Message *Message `json:"message,omitempty"`
}

// Message is a chat message.
type Message struct {
	// MessageID is unique within the chat.
	MessageID int64 `json:"message_id"`
	// MessageThreadID is the forum topic (or reply thread) the message
	// belongs to; IsTopicMessage is true inside a forum topic.
	MessageThreadID int64 `json:"message_thread_id,omitempty"`
	IsTopicMessage  bool  `json:"is_topic_message,omitempty"`
	// From is the sender; empty for channel posts.
	From *User `json:"from,omitempty"`
	// Chat is the conversation.
	Chat Chat `json:"chat"`
	// Text is the message text; Caption a media message's.
	Text    string `json:"text,omitempty"`
	Caption string `json:"caption,omitempty"`
	// Entities are the text's mentions, commands and formatting.
	Entities []Entity `json:"entities,omitempty"`
	// ReplyTo is the message this one replies to.
	ReplyTo *Message `json:"reply_to_message,omitempty"`
}

// User is a Telegram user or bot.
type User struct {
	// ID is the user's stable numeric id.
	ID int64 `json:"id"`
	// IsBot marks bots.
	IsBot bool `json:"is_bot,omitempty"`
	// FirstName, LastName and Username are the mutable names.
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is a conversation.
type Chat struct {
	// ID is the chat's numeric id (negative for groups).
	ID int64 `json:"id"`
	// Type is "private", "group", "supergroup" or "channel".
	Type string `json:"type"`
	// Title names a group.
	Title string `json:"title,omitempty"`
	// IsForum marks a supergroup with topics.
	IsForum bool `json:"is_forum,omitempty"`
}

// Entity is one special span of a message's text.
type Entity struct {
	// Type is "mention", "text_mention", "bot_command", … .
	Type string `json:"type"`
	// User is the mentioned user of a "text_mention".
	User *User `json:"user,omitempty"`
}

// generalTopic is a forum's General topic: messages there carry no
// thread id, and sends to it must leave message_thread_id out.
const generalTopic = 1

// ParseUpdate decodes one update.
func ParseUpdate(raw []byte) (Update, error) {
	var u Update
	if err := json.Unmarshal(raw, &u); err != nil {
		return Update{}, fmt.Errorf("telegram: update: %w", err)
	}
	return u, nil
}

// Self is the bot's own identity (getMe).
type Self struct {
	ID       int64
	Username string
}

// errSkip marks updates that are not chat messages for the agent.
var errSkip = errors.New("telegram: not a chat message")

// ToInbound turns a message update into the channel's inbound form, as
// the reference routes it: a private chat is a DM from its user (peer:
// the numeric user id), a group or supergroup is the room "<chatId>", and
// a forum supergroup's message is the room "<chatId>:topic:<threadId>"
// (the General topic is thread 1). Mentioned is set for "@<bot>" in the
// text, a text mention or a reply to the bot, or a match of patterns.
// It returns errSkip for updates that are no such message: other update
// kinds, channels, the bot's own messages, messages without text.
func ToInbound(me Self, u Update, patterns []*regexp.Regexp) (channel.Inbound, error) {
	m := u.Message
	if m == nil || m.From == nil || m.From.ID == me.ID && me.ID != 0 {
		return channel.Inbound{}, errSkip
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	if strings.TrimSpace(text) == "" {
		return channel.Inbound{}, errSkip
	}
	id := strconv.FormatInt(m.From.ID, 10)
	in := channel.Inbound{
		Channel: Name, AccountID: "default", Sender: id, SenderName: id, DisplayName: displayName(m.From),
		Text: commandForBot(text, me.Username),
	}
	switch m.Chat.Type {
	case "private":
		in.Kind = channel.KindDirect
		return in, nil
	case "group", "supergroup":
	default:
		return channel.Inbound{}, errSkip
	}
	in.Kind, in.Room = channel.KindGroup, Room(m)
	in.Mentioned = mentioned(me, m, text, patterns)
	return in, nil
}

// commandForBot drops the "@<username>" Telegram adds to a command picked
// from a group's menu or sent as a link ("/status@my_bot args" →
// "/status args"), so that the gateway's commands see their own name (in
// a private chat they run; a group's text reaches the model with its
// sender's name). A command addressed to another bot, and any other text,
// is left as it is.
func commandForBot(text, username string) string {
	if username == "" {
		return text
	}
	body := strings.TrimLeft(text, " \t\r\n")
	if !strings.HasPrefix(body, "/") {
		return text
	}
	end := strings.IndexAny(body, " \t\r\n")
	if end < 0 {
		end = len(body)
	}
	at := strings.IndexByte(body[:end], '@')
	if at < 0 || !strings.EqualFold(body[at+1:end], username) {
		return text
	}
	return body[:at] + body[end:]
}

// Room is the room id of a group message: "<chatId>", or in a forum
// "<chatId>:topic:<threadId>".
func Room(m *Message) string {
	room := strconv.FormatInt(m.Chat.ID, 10)
	if !m.Chat.IsForum {
		return room
	}
	thread := int64(generalTopic)
	if m.IsTopicMessage && m.MessageThreadID > 0 {
		thread = m.MessageThreadID
	}
	return room + ":topic:" + strconv.FormatInt(thread, 10)
}

func displayName(u *User) string {
	if u.Username != "" {
		return "@" + u.Username
	}
	if n := strings.TrimSpace(u.FirstName + " " + u.LastName); n != "" {
		return n
	}
	return strconv.FormatInt(u.ID, 10)
}

func mentioned(me Self, m *Message, text string, patterns []*regexp.Regexp) bool {
	if handleIn(text, me.Username) || channel.Mentioned(text, "", patterns) {
		return true
	}
	for _, e := range m.Entities {
		if e.Type == "text_mention" && e.User != nil && e.User.ID == me.ID && me.ID != 0 {
			return true
		}
	}
	// A reply to the bot counts, but not a topic message's implicit
	// reply to the topic's first message.
	r := m.ReplyTo
	return r != nil && r.From != nil && me.ID != 0 && r.From.ID == me.ID && !(m.IsTopicMessage && r.MessageID == m.MessageThreadID)
}

// handleIn reports whether text holds "@<username>" not followed by
// another username character (so "/cmd@bot" counts, "@bot2" does not).
func handleIn(text, username string) bool {
	if username == "" {
		return false
	}
	lt, h := strings.ToLower(text), "@"+strings.ToLower(username)
	for i := 0; ; {
		j := strings.Index(lt[i:], h)
		if j < 0 {
			return false
		}
		end := i + j + len(h)
		if end == len(lt) || !usernameByte(lt[end]) {
			return true
		}
		i = end
	}
}

func usernameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// Target is where a reply goes: a chat and, in a forum, a topic.
type Target struct {
	// ChatID is the numeric chat id, or "@channelusername".
	ChatID string
	// Thread is the forum topic; 0 for none, and the General topic (1)
	// is sent without one.
	Thread int64
}

// ParseTarget reads a route's target: "<chatId>", "<chatId>:topic:<id>",
// optionally prefixed "telegram:" or "tg:".
func ParseTarget(s string) (Target, error) {
	s = strings.TrimSpace(s)
	for _, p := range []string{"telegram:", "tg:"} {
		if len(s) > len(p) && strings.EqualFold(s[:len(p)], p) {
			s = s[len(p):]
		}
	}
	chat, thread, hasTopic := strings.Cut(s, ":topic:")
	t := Target{ChatID: chat}
	if _, err := strconv.ParseInt(chat, 10, 64); err != nil && !(len(chat) > 1 && chat[0] == '@' && !strings.ContainsAny(chat, " :/")) {
		return Target{}, fmt.Errorf("telegram: bad target %q", s)
	}
	if hasTopic {
		n, err := strconv.ParseInt(thread, 10, 64)
		if err != nil || n <= 0 {
			return Target{}, fmt.Errorf("telegram: bad topic in target %q", s)
		}
		t.Thread = n
	}
	return t, nil
}

// NormalizeAllow strips the "telegram:" and "tg:" prefixes the reference
// accepts on allowFrom entries.
func NormalizeAllow(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		e = strings.TrimSpace(e)
		for _, p := range []string{"telegram:", "tg:"} {
			if len(e) > len(p) && strings.EqualFold(e[:len(p)], p) {
				e = e[len(p):]
			}
		}
		out = append(out, e)
	}
	return out
}
