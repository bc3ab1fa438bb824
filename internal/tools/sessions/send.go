package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Names and lanes used by sessions_send.
const (
	SendToolName = "sessions_send"
	// defaultSendTimeoutSeconds is sessions_send's default wait.
	defaultSendTimeoutSeconds = 30
)

// Delivery statuses reported by sessions_send (beyond the reference's
// "pending"): where the message is when the tool returns.
const (
	DeliveryPending   = "pending"   // fire-and-forget: accepted, not waited on
	DeliveryQueued    = "queued"    // waiting behind another run on the target's lane
	DeliveryDelivered = "delivered" // the target is processing it
	DeliveryReplied   = "replied"   // the target replied
	DeliveryFailed    = "failed"    // the target's run failed or was aborted
)

var sendSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "sessionKey": {"type": "string", "description": "Target session key or sessionId (from sessions_list)."},
    "label": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Target session label (instead of sessionKey)."},
    "agentId": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Agent of the labelled session (with label)."},
    "message": {"type": "string", "description": "The message to send."},
    "timeoutSeconds": {"type": "number", "minimum": 0, "description": "Seconds to wait for the reply (default 30; 0 = fire-and-forget)."}
  },
  "required": ["message"]
}`)

type sendTool struct{ t *Tools }

func (sendTool) Name() string { return SendToolName }

// Label is the tool's display label.
func (sendTool) Label() string { return "Session Send" }
func (sendTool) Description() string {
	return "Send a message into another session. Use sessionKey or label to identify the target."
}
func (sendTool) Schema() json.RawMessage { return sendSchema }

func (s sendTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	res, err := s.t.send(ctx, tools.CallerFrom(ctx), p)
	if err != nil {
		return nil, err
	}
	return tools.JSONResult(res), nil
}

// sendResult is sessions_send's payload; field order follows the
// reference's output.
type sendResult struct {
	RunID      string         `json:"runId"`
	Status     string         `json:"status"`
	Error      string         `json:"error,omitempty"`
	Reply      *string        `json:"reply,omitempty"`
	SessionKey string         `json:"sessionKey,omitempty"`
	Delivery   *sendDelivery  `json:"delivery,omitempty"`
	Extra      map[string]any `json:"-"`
}

type sendDelivery struct {
	Status string `json:"status"`
	Mode   string `json:"mode"`
	// Position is how many runs are ahead of a queued message on the
	// target's lane (1: the run in progress only).
	Position int `json:"position,omitempty"`
	// ExpectedWaitMs estimates how long it waits before its run starts,
	// from how long the target's runs take (absent when unknown).
	ExpectedWaitMs int64 `json:"expectedWaitMs,omitempty"`
}

// queued marks d as waiting at pos on target's lane, with its expected
// wait when one can be told.
func (t *Tools) queued(d *sendDelivery, target string, pos int) {
	d.Status, d.Position = DeliveryQueued, pos
	if t.d.ExpectedWait != nil {
		d.ExpectedWaitMs = t.d.ExpectedWait(target, pos).Milliseconds()
	}
}

// queuePosition returns how many runs are ahead of run runID on the
// target's lane (the one in progress and those queued before it), or 0
// when none is: it runs or is about to, or it ended.
func (t *Tools) queuePosition(ctx context.Context, targetKey, runID string) int {
	runs, err := t.d.Store.ListRuns(ctx, store.RunFilter{SessionKey: targetKey, Statuses: []store.RunStatus{store.RunRunning, store.RunQueued}})
	if err != nil {
		return 0
	}
	for i, r := range runs {
		if r.RunID == runID {
			return i
		}
	}
	return 0
}

// send implements sessions_send (docs/spec/reference-behaviour.md §6).
func (t *Tools) send(ctx context.Context, caller tools.Caller, p tools.Params) (*sendResult, error) {
	message := p.String("message")
	if message == "" {
		return nil, errors.New("message required")
	}
	c, err := t.newCallCtx(ctx, caller, policy.ActionSend)
	if err != nil {
		return nil, err
	}
	keyParam, label := p.String("sessionKey"), p.String("label")
	if keyParam != "" && label != "" {
		return &sendResult{RunID: t.d.NewID(), Status: "error", Error: "Provide either sessionKey or label (not both)."}, nil
	}
	if peer, ok := strings.CutPrefix(keyParam, RemotePrefix); ok && t.d.Remote != nil && t.d.Remote.HasPeer(peer) {
		timeoutSeconds := defaultSendTimeoutSeconds
		if n, ok := p.Int("timeoutSeconds", 0); ok {
			timeoutSeconds = n
		}
		return t.sendRemote(ctx, c, peer, message, timeoutSeconds), nil
	}
	var target refResult
	switch {
	case label != "":
		r, fail := t.resolveLabel(ctx, c, label, p.String("agentId"))
		if fail != nil {
			return &sendResult{RunID: t.d.NewID(), Status: fail.Status, Error: fail.Message}, nil
		}
		target = r
	case keyParam == "":
		return &sendResult{RunID: t.d.NewID(), Status: "error", Error: "Either sessionKey or label is required"}, nil
	default:
		r, fail := t.resolveRef(ctx, c, keyParam)
		if fail != nil {
			return &sendResult{RunID: t.d.NewID(), Status: fail.Status, Error: fail.Message, SessionKey: fail.Display}, nil
		}
		target = r
	}

	timeoutSeconds := defaultSendTimeoutSeconds
	if n, ok := p.Int("timeoutSeconds", 0); ok {
		timeoutSeconds = n
	}
	announceTimeout := 30 * time.Second
	if timeoutSeconds > 0 {
		announceTimeout = time.Duration(timeoutSeconds) * time.Second
	}

	if ok, status, msg := c.guard.Check(policy.ActionSend, target.Key); !ok {
		return &sendResult{RunID: t.d.NewID(), Status: status, Error: msg, SessionKey: target.Display}, nil
	}

	// Deadlock: a wait on a session that already waits (through any
	// number of others) on the caller could only time out.
	if timeoutSeconds > 0 && caller.SessionKey != "" {
		release, cycle := t.waits.acquire(caller.SessionKey, target.Key)
		if cycle != nil {
			t.log.Warn("sessions_send wait refused: deadlock", "chain", caller.Chain.ID, "cycle", strings.Join(cycle, " → "))
			t.refused(RefusalDeadlock)
			return &sendResult{RunID: t.d.NewID(), Status: "error", Error: deadlockError(cycle), SessionKey: target.Display}, nil
		}
		defer release()
	}
	// The primary run on the target's lane. The messenger's admission
	// applies the guards — loop protection (the message continues its
	// sender's chain of causes) and the session trees' budgets (a spent
	// one refuses the message here, where the model reads why, rather than
	// stopping the run it would start) — and the target's send policy
	// (docs/spec/reference-behaviour.md §8).
	//
	// The agent-to-agent flow is recorded with the run (in the commit that
	// stores it, where the store can), so that its write is neither
	// between the reply and this tool's result nor beside the target's
	// run. It waits for the primary run itself and takes the run's latest
	// reply as its round one: that is the reply this call returns whenever
	// that one is not empty. Recorded once, it is also what a wait that
	// times out or fails leaves to run (a run that did not end ok has no
	// flow steps).
	msgRunID := t.d.NewID()
	run, err := t.d.Messenger.Send(ctx, Message{
		RunID: msgRunID, TargetKey: target.Key, Text: message,
		ExtraSystemPrompt: A2AMessageContext(caller.SessionKey, caller.Channel, target.Display),
		SourceSessionKey:  caller.SessionKey, SourceChannel: caller.Channel,
		Chain: caller.Chain.Next(target.Key),
		Flow: &Flow{
			TargetKey: target.Key, DisplayKey: target.Display, Message: message,
			AnnounceTimeout: announceTimeout, MaxTurns: t.d.Settings.Sessions.MaxPingPongTurns,
			RequesterKey: caller.SessionKey, RequesterChannel: caller.Channel, WaitRunID: msgRunID,
			RequesterRunID: caller.RunID, Chain: caller.Chain.Next(target.Key),
		},
	})
	var refused interface{ RefusalKind() string }
	if errors.As(err, &refused) {
		if refused.RefusalKind() == RefusalLoop {
			t.log.Warn("agent chain stopped", "chain", caller.Chain.ID, "hops", caller.Chain.Hops, "from", caller.SessionKey, "to", target.Key)
		}
		t.refused(refused.RefusalKind())
	}
	if err != nil {
		return &sendResult{RunID: t.d.NewID(), Status: "error", Error: err.Error(), SessionKey: target.Display}, nil
	}
	runID := run.RunID

	if timeoutSeconds == 0 {
		d := &sendDelivery{Status: DeliveryPending, Mode: "announce"}
		if pos := t.queuePosition(context.WithoutCancel(ctx), target.Key, runID); pos > 0 {
			// The target is busy: say so, where the message waits, and for
			// about how long.
			t.queued(d, target.Key, pos)
		}
		return &sendResult{RunID: runID, Status: "accepted", SessionKey: target.Display, Delivery: d}, nil
	}

	done, ok, err := t.d.Messenger.Wait(ctx, runID, time.Duration(timeoutSeconds)*time.Second)
	if err != nil {
		return &sendResult{RunID: runID, Status: "error", Error: err.Error(), SessionKey: target.Display}, nil
	}
	if !ok {
		// The run goes on; its reply is never lost: agent.wait on runId,
		// or sessions_history on the target, returns it later.
		d := &sendDelivery{Status: DeliveryDelivered, Mode: "announce"}
		if pos := t.queuePosition(context.WithoutCancel(ctx), target.Key, runID); pos > 0 {
			t.queued(d, target.Key, pos)
		}
		return &sendResult{
			RunID: runID, Status: "timeout", SessionKey: target.Display,
			Error:    fmt.Sprintf("no reply within %ds; the run continues. Fetch the reply later with agent.wait {runId:%q} or sessions_history.", timeoutSeconds, runID),
			Delivery: d,
		}, nil
	}
	switch done.Status {
	case store.RunOK:
	case store.RunTimeout:
		return &sendResult{RunID: runID, Status: "timeout", Error: done.Error, SessionKey: target.Display,
			Delivery: &sendDelivery{Status: DeliveryFailed, Mode: "announce"}}, nil
	default:
		msg := done.Error
		if msg == "" {
			msg = "agent error"
		}
		return &sendResult{RunID: runID, Status: "error", Error: msg, SessionKey: target.Display,
			Delivery: &sendDelivery{Status: DeliveryFailed, Mode: "announce"}}, nil
	}
	reply, err := t.d.Messenger.Reply(context.WithoutCancel(ctx), done)
	if err != nil {
		return nil, err
	}
	res := &sendResult{RunID: runID, Status: "ok", SessionKey: target.Display,
		Delivery: &sendDelivery{Status: DeliveryReplied, Mode: "announce"}}
	if reply != "" {
		res.Reply = &reply
	}
	return res, nil
}

// resolveLabel is the label path of docs/spec/reference-behaviour.md §6.1 step 3.
func (t *Tools) resolveLabel(ctx context.Context, c *callCtx, label, agentParam string) (refResult, *refError) {
	requested, denial := policy.CheckLabelSend(c.requester, agentParam, c.restrict, c.a2a)
	if denial != nil {
		return refResult{}, &refError{Status: denial.Status, Message: denial.Message}
	}
	opts := store.ListOptions{Label: label, AgentID: requested}
	if c.restrict {
		opts.SpawnedBy = c.requester
		if opts.AgentID == "" {
			opts.AgentID = c.agentID
		}
	}
	rows, err := t.d.Store.ListSessions(ctx, opts)
	var found []*store.Session
	for _, r := range rows {
		if r.Label == label && !sessionkey.IsReserved(r.Key) {
			found = append(found, r)
		}
	}
	notVisible := &refError{Status: policy.StatusForbidden, Message: "Session not visible from this sandboxed agent session."}
	switch {
	case err != nil:
		if c.restrict {
			return refResult{}, notVisible
		}
		return refResult{}, &refError{Status: "error", Message: err.Error()}
	case len(found) == 0:
		if c.restrict {
			return refResult{}, notVisible
		}
		return refResult{}, &refError{Status: "error", Message: "No session found with label: " + label}
	case len(found) > 1:
		keys := make([]string, len(found))
		for i, f := range found {
			keys[i] = f.Key
		}
		return refResult{}, &refError{Status: "error", Message: fmt.Sprintf("Multiple sessions found with label: %s (%s)", label, strings.Join(keys, ", "))}
	}
	return refResult{Key: found[0].Key, Display: t.alias.Display(found[0].Key)}, nil
}

// SendPolicyOf resolves session.sendPolicy (rules, nil for none) for a
// session (nil when it does not exist yet) with the given key, for a
// message on channel (docs/spec/reference-behaviour.md §8).
func SendPolicyOf(rules *policy.SendPolicyConfig, s *store.Session, key, channel string) policy.Decision {
	in := policy.SendInput{Config: rules, SessionKey: key, Channel: channel}
	if s != nil {
		in.EntryOverride = s.SendPolicy
		in.EntryChannel = s.Channel
		in.EntryLastChannel = s.LastChannel
		in.EntryChatType = s.ChatType
	}
	return policy.ResolveSend(in)
}

// A2AMessageContext is the extra system prompt of the primary run (docs/spec/reference-behaviour.md §6.2).
func A2AMessageContext(requesterKey, requesterChannel, targetDisplay string) string {
	lines := []string{"Agent-to-agent message context:"}
	if requesterKey != "" {
		lines = append(lines, "Agent 1 (requester) session: "+requesterKey+".")
	}
	if requesterChannel != "" {
		lines = append(lines, "Agent 1 (requester) channel: "+requesterChannel+".")
	}
	lines = append(lines, "Agent 2 (target) session: "+targetDisplay+".")
	return strings.Join(lines, "\n")
}

// sendRemote is sessions_send to a remote A2A peer: the same statuses as a
// local send (accepted, ok with the reply, timeout, error); runId is the
// remote task id.
func (t *Tools) sendRemote(ctx context.Context, c *callCtx, peer, message string, timeoutSeconds int) *sendResult {
	key := RemotePrefix + peer
	caller := c.caller
	// The checks of a local send, with the peer as another agent.
	if ok, status, msg := c.guard.CheckRemote(policy.ActionSend, peer); !ok {
		return &sendResult{RunID: t.d.NewID(), Status: status, Error: msg, SessionKey: key}
	}
	if SendPolicyOf(t.d.Settings.SendRules, nil, key, RemoteChannel) == policy.DecisionDeny {
		return &sendResult{RunID: t.d.NewID(), Status: "error", Error: policy.SendBlockedMessage, SessionKey: key}
	}
	lim := tools.ChainLimits{MaxHops: t.d.Settings.Sessions.MaxChainHops, MaxVisits: t.d.Settings.Sessions.MaxChainVisits}
	if why := caller.Chain.CheckNext(key, lim); why != "" {
		t.log.Warn("agent chain stopped", "chain", caller.Chain.ID, "hops", caller.Chain.Hops, "from", caller.SessionKey, "to", key)
		t.refused(RefusalLoop)
		return &sendResult{RunID: t.d.NewID(), Status: "error", Error: why, SessionKey: key}
	}
	timeoutSeconds = max(timeoutSeconds, 0)
	wait := time.Duration(timeoutSeconds) * time.Second
	// The requester key (the main alias for a call without a session)
	// picks the remote conversation.
	r, err := t.d.Remote.SendRemote(ctx, RemoteMessage{Peer: peer, SourceKey: c.requester, Text: message,
		Chain: caller.Chain.Next(key), Wait: wait})
	runID := r.TaskID
	if runID == "" {
		runID = t.d.NewID()
	}
	switch {
	case err != nil:
		return &sendResult{RunID: runID, Status: "error", Error: err.Error(), SessionKey: key}
	case timeoutSeconds == 0:
		return &sendResult{RunID: runID, Status: "accepted", SessionKey: key,
			Delivery: &sendDelivery{Status: DeliveryPending, Mode: "a2a"}}
	case !r.Final:
		return &sendResult{RunID: runID, Status: "timeout", SessionKey: key,
			Error:    fmt.Sprintf("no reply within %ds; the remote task %s continues on A2A peer %s, and its reply will be posted into this session.", timeoutSeconds, runID, peer),
			Delivery: &sendDelivery{Status: DeliveryDelivered, Mode: "a2a"}}
	case !r.OK:
		msg := r.Error
		if msg == "" {
			msg = "remote agent error"
		}
		return &sendResult{RunID: runID, Status: "error", Error: msg, SessionKey: key,
			Delivery: &sendDelivery{Status: DeliveryFailed, Mode: "a2a"}}
	}
	res := &sendResult{RunID: runID, Status: "ok", SessionKey: key, Delivery: &sendDelivery{Status: DeliveryReplied, Mode: "a2a"}}
	if r.Reply != "" {
		res.Reply = &r.Reply
	}
	return res
}
