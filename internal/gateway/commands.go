package gateway

import (
	"context"
	"errors"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/compaction"
)

// Admitter is the admission step every message to a session goes
// through (*admission.Admitter): it decides commands, the send policy and
// the queue, and stores the run.
type Admitter interface {
	Accept(ctx context.Context, req admission.Request) (admission.Ticket, error)
}

// RunCommand implements admission.Commands: the commands that need the
// gateway (its events, the runner's compaction, the agent's elevated
// gates) are carried out here, once admission decided the sender may.
func (s *Server) RunCommand(ctx context.Context, cmd admission.Command) (admission.Answer, error) {
	switch {
	case cmd.Elevated != nil:
		reply, err := s.elevatedCommand(ctx, cmd.SessionKey, cmd.AgentID, cmd.RunID, cmd.Channel, *cmd.Elevated)
		return admission.Answer{Reply: reply}, err
	case cmd.Session != nil && (cmd.Session.Kind == compaction.CmdHelp || cmd.Session.Kind == compaction.CmdStatus):
		reply, err := s.infoCommand(ctx, cmd)
		return admission.Answer{Reply: reply}, err
	case cmd.Session != nil && cmd.Session.Kind == compaction.CmdTasks:
		reply, err := s.tasksCommand(ctx, cmd)
		return admission.Answer{Reply: reply}, err
	case cmd.Session != nil && cmd.Session.Kind == compaction.CmdName:
		reply, err := s.nameCommand(ctx, cmd)
		return admission.Answer{Reply: reply}, err
	case cmd.Session != nil && cmd.Session.Kind == compaction.CmdStop:
		reply, err := s.stopCommand(ctx, cmd)
		return admission.Answer{Reply: reply}, err
	case cmd.Session != nil && (cmd.Session.Kind == compaction.CmdModel || cmd.Session.Kind == compaction.CmdModels):
		return s.modelCommand(ctx, cmd)
	case cmd.Session != nil:
		reply, next, err := s.sessionCommand(ctx, cmd.SessionKey, cmd.AgentID, cmd.RunID, *cmd.Session)
		return admission.Answer{Reply: reply, Next: next}, err
	}
	return admission.Answer{}, errors.New("gateway: empty command")
}

// Reply implements admission.Commands: it records a command's reply in
// the session under runID, shown to its clients as the chat's final.
func (s *Server) Reply(ctx context.Context, key, runID, text string) error {
	_, err := s.Inject(ctx, Injection{SessionKey: key, Text: text, IdempotencyKey: runID + ":reply", RunID: runID})
	return err
}
