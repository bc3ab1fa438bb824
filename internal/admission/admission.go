// Package admission owns the one step between Switchboard's doors and the
// agent runner: every door (the WebSocket's chat.send and agent, the HTTP
// API, A2A, webhooks, cron, the chat channels, sessions_send,
// sessions_spawn and announces) hands a message to Accept, which decides
// once what it means — whether it is a slash command the sender may run,
// whether the guards (agent chains' limits, session trees' budgets) and
// the session's send policy let it in, what it does while the
// session is busy (queue mode, messages.queue.cap) — fills in a new
// session row the one way, and stores the run (the durable enqueue) on its
// session's lane. It returns a Ticket: the run id and the run's place on
// the lane, or what a command answered.
//
// Who may run commands is decided from the request's origin and the
// input's trust (see Origin): the operator and the allowlisted senders of
// a channel's direct messages get them; A2A peers, webhooks, chat rooms,
// cron and other agents send plain text, as the reference treats commands
// of unauthorized senders ("directives treated as plain text").
//
// It imports the runner's input type, the policy rules and the store;
// the commands that need the gateway (its events, the runner's compaction)
// are carried out by a Commands the daemon wires in.
package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
)

// Origin is the kind of door a request came through.
type Origin string

// Origins. Operator and Channel are people a door authenticated; the
// others are not (see Origin.people).
const (
	// OriginOperator is an operator client: the WebSocket, the HTTP API,
	// the CLI.
	OriginOperator Origin = "operator"
	// OriginChannel is a chat channel's inbound message (IRC, Telegram).
	OriginChannel Origin = "channel"
	// OriginA2A is an A2A peer's message.
	OriginA2A Origin = "a2a"
	// OriginWebhook is a webhook (hooks) request.
	OriginWebhook Origin = "webhook"
	// OriginCron is a cron job's run.
	OriginCron Origin = "cron"
	// OriginAgent is another session's agent: sessions_send, and the
	// gateway's agent method carrying an inter-session provenance.
	OriginAgent Origin = "agent"
	// OriginSpawn is the first run of a sessions_spawn child (a fresh
	// session of the spawning agent's making: no send policy).
	OriginSpawn Origin = "spawn"
	// OriginAnnounce is a result delivered to the session that asked for
	// it (a sub-agent's completion, an agent-to-agent announce): never
	// refused by the send policy, never dropped at the cap.
	OriginAnnounce Origin = "announce"
	// OriginStep is an internal step of a flow already admitted (a
	// reply-back turn) or a system event (a wake): no command, no send
	// policy, no queue settings of its own.
	OriginStep Origin = "step"
)

// Rule is what admission does for one origin (the table RuleFor).
type Rule struct {
	// Commands: a standalone slash command is carried out (when the input
	// is not from outside the operator, see agent.Input.Untrusted);
	// otherwise the text goes to the model as it is.
	Commands bool
	// SendPolicy: the session's send policy may refuse the message.
	SendPolicy bool
	// Queue: how the queue settings are applied ("": as resolved, "inter":
	// as for a message from another session, "keep": inter and never
	// dropped at the cap, "none": no queue settings).
	Queue string
	// Guards: the agent chain's limits and the session trees' budgets
	// may refuse the message (*Refusal), before the send policy.
	Guards bool
}

// RuleFor is the one table of what each origin gets; ok is false for an
// origin that is not one of the constants above. (A switch, not a map
// literal: a package-level map is built at every process start.)
func RuleFor(o Origin) (r Rule, ok bool) {
	switch o {
	case OriginOperator, OriginChannel:
		return Rule{Commands: true, SendPolicy: true}, true
	case OriginA2A, OriginWebhook, OriginCron:
		return Rule{SendPolicy: true}, true
	case OriginAgent:
		return Rule{SendPolicy: true, Queue: "inter", Guards: true}, true
	case OriginSpawn:
		return Rule{}, true
	case OriginAnnounce:
		return Rule{Queue: "keep"}, true
	case OriginStep:
		return Rule{Queue: "none"}, true
	}
	return Rule{}, false
}

// ErrSendDenied is the refusal of a message the session's send policy
// blocks; its text is the reference's.
var ErrSendDenied = errors.New(policy.SendBlockedMessage)

// QueueFullError is the refusal of a message at its session's queue cap
// (messages.queue.drop "new"); its text is the reference's. It wraps
// agent.ErrQueueFull.
type QueueFullError struct {
	// Cap is the cap in force.
	Cap int
}

// Error is the reference's text for the cap.
func (e *QueueFullError) Error() string { return policy.QueueFullError(e.Cap) }

// Unwrap makes errors.Is(err, agent.ErrQueueFull) hold.
func (e *QueueFullError) Unwrap() error { return agent.ErrQueueFull }

// Request is one message a door hands to admission.
type Request struct {
	// Origin is the door's kind; it picks the Rule.
	Origin Origin
	// Input is the run as the door builds it: session key (canonical),
	// agent, text, images, the door's channel and route, provenance and
	// the chain of causes (the trust the input carries), the run id (the
	// idempotency key), and the door's own options. Admission fills in
	// the queue fields.
	Input agent.Input
	// QueueMode is the mode the request itself asks for ("" none).
	QueueMode string
	// Admin says the sender may change the session's send policy (/send);
	// anyone else's /send is consumed silently, as the reference does.
	Admin bool
	// Sender is who sent the message, as the door knows them (a chat
	// channel's sender; zero for the operator's doors). /whoami shows it.
	Sender Sender
}

// Sender is a message's sender as a chat channel knows them.
type Sender struct {
	// ID is the stable identity the channel's allowlists match (Telegram:
	// the numeric user id; IRC: nick!user@host).
	ID string
	// Name is how the sender is shown (a display name or nick).
	Name string
}

// Ticket is what admission did with a request.
type Ticket struct {
	// RunID is the run's id (for a command without a run, the request's
	// run id, under which the command's reply was recorded).
	RunID string
	// Run is the stored run; nil when a command answered without one.
	Run *store.Run
	// Created is false for a repeated run id (Run is the existing run).
	Created bool
	// Position is how many runs are ahead on the session's lane.
	Position int
	// Command names the slash command carried out ("" for none).
	Command string
	// Reply is what the command answered ("" when it answered nothing).
	Reply string
	// Queue is the queue settings the run was accepted with.
	Queue policy.QueueSettings
}

// Runner is what admission needs of the agent runner: the durable
// enqueue.
type Runner interface {
	Enqueue(ctx context.Context, in agent.Input) (agent.Enqueued, error)
	// EndCommand records a command's run id as a run that ended ok, so
	// that agent.wait on the id a door acknowledged reaches a final.
	EndCommand(ctx context.Context, runID, sessionKey, agentID string) error
}

// Store is what admission reads and writes of sessions.
type Store interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
	UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error)
}

// Command is a slash command admission decided to carry out.
type Command struct {
	// SessionKey, AgentID and RunID are the request's.
	SessionKey, AgentID, RunID string
	// Channel is the channel the command came from (sessionkey.InternalChannel
	// for the operator).
	Channel string
	// Elevated is set for "/elevated [level]".
	Elevated *policy.ElevatedCommand
	// Session is set for /new, /reset, /compact, /context, /help,
	// /status, /model, /models and /stop (also for an abort word);
	// admission answers /whoami itself.
	Session *compaction.Command
	// Queue is set for /status: the session's queue settings as a message
	// from the command's channel would get them.
	Queue *policy.QueueSettings
}

// Answer is what a command did.
type Answer struct {
	// Reply is the text the command answered (already recorded in the
	// session when it exists).
	Reply string
	// Next is text that follows /new or /reset: it runs as the session's
	// first turn under the request's run id.
	Next string
}

// Commands carries out the commands that need the gateway (its events,
// the runner's compaction, the agent's configuration) and records their
// replies in the session.
type Commands interface {
	RunCommand(ctx context.Context, cmd Command) (Answer, error)
	// Reply records text as the session's reply to the command under
	// runID (nothing when the session does not exist).
	Reply(ctx context.Context, key, runID, text string) error
}

// Config configures an Admitter. Runner and Store are required.
type Config struct {
	Runner Runner
	Store  Store
	// Commands carries out /new, /reset, /compact, /context, /elevated
	// and records command replies; nil: commands are plain text.
	Commands Commands
	// SendRules is session.sendPolicy (nil: allow).
	SendRules *policy.SendPolicyConfig
	// Queue is messages.queue.
	Queue policy.QueueConfig
	// Guards are the chain limits and budgets (Rule.Guards).
	Guards Guards
	// Now and NewID default to the clock and random UUIDs.
	Now   func() time.Time
	NewID func() string
}

// Admitter is the admission step.
type Admitter struct {
	cfg      Config
	commands atomic.Pointer[Commands]
}

// New returns an Admitter.
func New(cfg Config) (*Admitter, error) {
	if cfg.Runner == nil || cfg.Store == nil {
		return nil, errors.New("admission.New: Runner and Store are required")
	}
	a := &Admitter{cfg: cfg}
	if cfg.Commands != nil {
		a.commands.Store(&cfg.Commands)
	}
	return a, nil
}

// SetCommands sets what carries out the gateway's commands (the gateway
// is built after the admitter it uses); until then commands are plain
// text.
func (a *Admitter) SetCommands(c Commands) { a.commands.Store(&c) }

// cmds returns the commands' executor, nil when none is set.
func (a *Admitter) cmds() Commands {
	if c := a.commands.Load(); c != nil {
		return *c
	}
	return nil
}

// Accept admits one message: a command is carried out, a message a guard
// stops is refused (*Refusal), one the send policy blocks is refused
// (ErrSendDenied), one over the queue cap
// is refused (*QueueFullError), and any other is stored as a run on its
// session's lane with its queue settings.
func (a *Admitter) Accept(ctx context.Context, req Request) (Ticket, error) {
	rule, ok := RuleFor(req.Origin)
	if !ok {
		return Ticket{}, fmt.Errorf("admission: unknown origin %q", req.Origin)
	}
	in := req.Input
	if in.SessionKey == "" {
		return Ticket{}, errors.New("admission: sessionKey required")
	}
	t := Ticket{RunID: in.RunID}
	if rule.Commands && a.cmds() != nil && in.Untrusted() == "" {
		done, next, err := a.command(ctx, req, &t)
		if err != nil {
			return t, err
		}
		if done {
			// No run follows: the acknowledged run id ends here, after
			// the command's reply is in the session.
			return t, a.cfg.Runner.EndCommand(ctx, in.RunID, in.SessionKey, in.AgentID)
		}
		if next.Message != "" {
			// The text after /new or /reset is the first turn; after
			// "/think <level>" it runs at that level.
			in.Message = next.Message
			in.Thinking = cmp.Or(next.Thinking, in.Thinking)
		}
	}
	if rule.Guards {
		if err := a.guard(ctx, in); err != nil {
			return Ticket{}, err
		}
	}
	// A store may serve the session from its memory; the run's open then
	// checks that it is still the stored row, and when it is not, nothing
	// was written and the session is read again. A refusal opens no run,
	// so one judged on a row served from memory (another node may have
	// changed its send policy or queue settings since) is judged again on
	// the stored row.
	cctx := store.WithSessionCheck(ctx)
	e, err := a.enqueue(cctx, rule, req, in, &t)
	if errors.Is(err, store.ErrSessionMoved) || (refusal(err) && servedFromMemory(cctx, in.SessionKey)) {
		e, err = a.enqueue(ctx, rule, req, in, &t)
	}
	if err != nil {
		return Ticket{}, err
	}
	t.RunID, t.Run, t.Created, t.Position = e.Run.RunID, e.Run, e.Created, e.Position
	return t, nil
}

// refusal reports whether err is enqueue's refusal of a message (send
// policy, queue cap), which follows from the session row read.
func refusal(err error) bool {
	var full *QueueFullError
	return errors.Is(err, ErrSendDenied) || errors.As(err, &full)
}

// servedFromMemory reports whether ctx's session check says the row of key
// was served from the store's memory.
func servedFromMemory(ctx context.Context, key string) bool {
	_, ok := store.SessionCheckOf(ctx).Version(key)
	return ok
}

// enqueue reads in's session, applies the send policy and the queue
// settings to in, and stores it as a run (Runner.Enqueue); t gets the
// queue settings.
func (a *Admitter) enqueue(ctx context.Context, rule Rule, req Request, in agent.Input, t *Ticket) (agent.Enqueued, error) {
	var sess *store.Session
	var err error
	if c := store.ChildOpenOf(ctx, in.SessionKey); c != nil && !c.Stored() {
		// A spawned child's session, stored with its first run.
		sess = c.Session.Clone()
	} else if sess, err = a.cfg.Store.GetSession(ctx, in.SessionKey); err != nil && !errors.Is(err, store.ErrNotFound) {
		return agent.Enqueued{}, fmt.Errorf("admission: read session: %w", err)
	}
	if rule.SendPolicy && sendDenied(a.cfg.SendRules, sess, in.SessionKey, in.Channel) {
		return agent.Enqueued{}, ErrSendDenied
	}
	if rule.Queue != "none" {
		q := policy.ResolveQueue(policy.QueueInput{
			Request: req.QueueMode, Session: agent.SessionQueueOverride(sess), Channel: in.Channel, Config: a.cfg.Queue,
		})
		switch rule.Queue {
		case "inter":
			in.ApplyInterSessionQueue(q, false)
		case "keep":
			in.ApplyInterSessionQueue(q, true)
		default:
			in.ApplyQueue(q)
		}
		t.Queue = q
	}
	in.Session = sess // Enqueue need not read it again
	e, err := a.cfg.Runner.Enqueue(ctx, in)
	if errors.Is(err, agent.ErrQueueFull) {
		return agent.Enqueued{}, &QueueFullError{Cap: in.QueueCap}
	}
	return e, err
}

// followUp is the turn that runs after a command: the text after /new or
// /reset, or after an inline "/think <level>" (at that level).
type followUp struct {
	Message  string
	Thinking string
}

// command carries out a standalone slash command in req's text. done is
// true when nothing more happens (no run); next is what runs next.
func (a *Admitter) command(ctx context.Context, req Request, t *Ticket) (done bool, next followUp, err error) {
	in := req.Input
	text := in.Message
	cmd := Command{SessionKey: in.SessionKey, AgentID: in.AgentID, RunID: in.RunID, Channel: in.Channel}
	if c, ok := policy.ParseSendCommand(strings.TrimSpace(text)); ok {
		t.Command = "send"
		if !req.Admin {
			return true, followUp{}, nil // consumed silently (the reference's rule)
		}
		t.Reply = c.Reply()
		return true, followUp{}, a.sendCommand(ctx, cmd, c)
	}
	if c, ok := policy.ParseQueueCommand(text); ok {
		t.Command = "queue"
		t.Reply, err = a.queueCommand(ctx, cmd, c)
		return true, followUp{}, err
	}
	if c, ok := policy.ParseThinkCommand(text); ok {
		if c.Text != "" {
			// An inline hint: this message only, the session's level
			// stays (the reference's rule).
			return false, followUp{Message: c.Text, Thinking: c.Level}, nil
		}
		t.Command = "think"
		t.Reply, err = a.thinkCommand(ctx, cmd, c)
		return true, followUp{}, err
	}
	if c, ok := policy.ParseElevatedCommand(text); ok {
		t.Command = "elevated"
		cmd.Elevated = &c
		ans, err := a.cmds().RunCommand(ctx, cmd)
		t.Reply = ans.Reply
		return true, followUp{}, err
	}
	c, ok := compaction.ParseCommand(text)
	if !ok && policy.IsAbortTrigger(text) {
		c, ok = compaction.Command{Kind: compaction.CmdStop}, true // "stop", "please stop", …
	}
	if ok {
		t.Command = c.Kind
		cmd.Session = &c
		if c.Kind != compaction.CmdNew && c.Kind != compaction.CmdReset && c.Kind != compaction.CmdStop {
			// A session's first message may be /help, /status, /context
			// or /compact: the session starts as it would for any
			// message, so that the answer has somewhere to go (/new and
			// /reset start it themselves; /stop starts nothing). A
			// session that exists needs no write here.
			sess, err := a.cfg.Store.GetSession(ctx, cmd.SessionKey)
			switch {
			case errors.Is(err, store.ErrNotFound):
				if err := a.update(ctx, cmd, func(*store.Session) error { return nil }); err != nil {
					return true, followUp{}, err
				}
			case err != nil:
				return true, followUp{}, fmt.Errorf("admission: read session: %w", err)
			}
			if c.Kind == compaction.CmdWhoami {
				t.Reply = whoamiText(cmd.Channel, req.Sender)
				return true, followUp{}, a.cmds().Reply(ctx, cmd.SessionKey, cmd.RunID, t.Reply)
			}
			if c.Kind == compaction.CmdStatus {
				// A session just started has no /queue override, as sess
				// (nil) has none.
				q := a.queueFor(sess, cmd.Channel)
				cmd.Queue = &q
			}
		}
		ans, err := a.cmds().RunCommand(ctx, cmd)
		t.Reply = ans.Reply
		return ans.Next == "" || err != nil, followUp{Message: ans.Next}, err
	}
	return false, followUp{}, nil
}
