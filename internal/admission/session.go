package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// FillSession fills in a new session row, the one way every door's rows
// are made: its id and start time (when it has no id yet), its agent (the
// key's own, else agentID), kind, chat type and channel from the key, the
// channel it was first reached on (LastChannel) and its spawn depth.
// Fields already set stay. newID may be nil when the row has its id.
func FillSession(s *store.Session, agentID, channel string, now time.Time, newID func() string) {
	if s.SessionID == "" && newID != nil {
		s.SessionID = newID()
		agent.MarkSessionStarted(s, now)
	}
	if s.AgentID == "" {
		s.AgentID = agentID
		if _, ok := sessionkey.Parse(s.Key); ok || agentID == "" {
			// The key's own agent wins; unprefixed keys belong to "main".
			s.AgentID = sessionkey.AgentID(s.Key)
		}
	}
	if s.Kind == "" {
		s.Kind = string(sessionkey.RowKindOf(s.Key))
	}
	if s.ChatType == "" {
		s.ChatType = string(sessionkey.ChatTypeOf(s.Key))
	}
	if s.Channel == "" {
		s.Channel = sessionkey.ChannelFromKey(s.Key)
	}
	if channel != "" && s.LastChannel == "" {
		s.LastChannel = channel
	}
	if d := sessionkey.SubagentDepth(s.Key); d > s.SpawnDepth {
		s.SpawnDepth = d
	}
}

// FillRunnerSession is FillSession for the rows the runner creates as it
// stores a run (agent.Config.InitSession).
func FillRunnerSession(s *store.Session, in *agent.Input) {
	FillSession(s, in.AgentID, in.Channel, time.Time{}, nil)
}

// sendDenied reports whether session.sendPolicy refuses a message to the
// session (sess nil when it does not exist yet) arriving on channel.
func sendDenied(rules *policy.SendPolicyConfig, sess *store.Session, key, channel string) bool {
	in := policy.SendInput{Config: rules, SessionKey: key, Channel: channel}
	if sess != nil {
		in.EntryOverride, in.EntryChannel, in.EntryLastChannel, in.EntryChatType = sess.SendPolicy, sess.Channel, sess.LastChannel, sess.ChatType
	}
	return policy.ResolveSend(in) == policy.DecisionDeny
}

// update changes key's session row, creating it (filled in) when it does
// not exist.
func (a *Admitter) update(ctx context.Context, cmd Command, fn func(*store.Session) error) error {
	now := a.now()
	_, err := a.cfg.Store.UpdateSession(ctx, cmd.SessionKey, true, func(x *store.Session) error {
		if x.SessionID == "" {
			FillSession(x, cmd.AgentID, cmd.Channel, now, a.newID)
		}
		x.UpdatedAt = now
		return fn(x)
	})
	if err != nil {
		return fmt.Errorf("admission: update session: %w", err)
	}
	return nil
}

// exists reports whether key has a session row.
func (a *Admitter) exists(ctx context.Context, key string) (bool, error) {
	_, err := a.cfg.Store.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// sendCommand carries out "/send on|off|inherit" for an admin sender
// (docs/spec/reference-behaviour.md §8) and records the reply.
func (a *Admitter) sendCommand(ctx context.Context, cmd Command, c policy.SendCommand) error {
	if !c.Usage {
		if err := a.update(ctx, cmd, func(x *store.Session) error {
			x.SendPolicy = string(c.Override)
			return nil
		}); err != nil {
			return err
		}
	} else if ok, err := a.exists(ctx, cmd.SessionKey); !ok {
		return err // nowhere to reply
	}
	return a.cmds().Reply(ctx, cmd.SessionKey, cmd.RunID, c.Reply())
}

// queueCommand shows, changes or resets the session's /queue override
// and records the reply; it returns the reply.
func (a *Admitter) queueCommand(ctx context.Context, cmd Command, c policy.QueueCommand) (string, error) {
	sess, err := a.cfg.Store.GetSession(ctx, cmd.SessionKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("admission: read session: %w", err)
	}
	cur := a.queueFor(sess, cmd.Channel)
	reply := c.Reply(cur)
	if !c.Show && len(c.Errors) == 0 {
		if err := a.update(ctx, cmd, func(x *store.Session) error {
			return agent.SetSessionQueueOverride(x, c.Apply(agent.SessionQueueOverride(x)))
		}); err != nil {
			return "", err
		}
	} else if sess == nil {
		return reply, nil // nowhere to record it
	}
	return reply, a.cmds().Reply(ctx, cmd.SessionKey, cmd.RunID, reply)
}

// thinkCommand shows, changes or resets the session's thinking level and
// records the reply; it returns the reply.
func (a *Admitter) thinkCommand(ctx context.Context, cmd Command, c policy.ThinkCommand) (string, error) {
	sess, err := a.cfg.Store.GetSession(ctx, cmd.SessionKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("admission: read session: %w", err)
	}
	var cur string
	if sess != nil {
		cur = sess.ThinkingLevel
	}
	reply := c.Reply(cur)
	if c.Sets() {
		if err := a.update(ctx, cmd, func(x *store.Session) error {
			x.ThinkingLevel = c.Level
			return nil
		}); err != nil {
			return "", err
		}
	} else if sess == nil {
		// Nowhere to record it yet: the session starts, as for /status.
		if err := a.update(ctx, cmd, func(*store.Session) error { return nil }); err != nil {
			return "", err
		}
	}
	return reply, a.cmds().Reply(ctx, cmd.SessionKey, cmd.RunID, reply)
}

// whoamiText is the /whoami answer (the reference's lines): the channel
// and, for a channel's sender, their id, their name and the allowFrom
// entry that admits them.
func whoamiText(channel string, s Sender) string {
	lines := []string{"🧭 Identity", "Channel: " + cmp.Or(channel, sessionkey.InternalChannel)}
	if s.ID == "" {
		lines = append(lines, "You are the gateway's operator (a token or password client).")
		return strings.Join(lines, "\n")
	}
	lines = append(lines, "User id: "+s.ID)
	if s.Name != "" && s.Name != s.ID {
		lines = append(lines, "Name: "+s.Name)
	}
	return strings.Join(append(lines, "AllowFrom: "+s.ID), "\n")
}

// queueFor is the queue settings a message from channel to sess (nil: a
// session without settings of its own) gets by its session's /queue
// override, the channel's and the configured ones.
func (a *Admitter) queueFor(sess *store.Session, channel string) policy.QueueSettings {
	return policy.ResolveQueue(policy.QueueInput{Session: agent.SessionQueueOverride(sess), Channel: channel, Config: a.cfg.Queue})
}

func (a *Admitter) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

func (a *Admitter) newID() string {
	if a.cfg.NewID != nil {
		return a.cfg.NewID()
	}
	return uuid.NewString()
}
