package daemon

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// newCron builds the cron scheduler over the store's job tables; each run
// is submitted to the agent runner in the job's session (cron:<jobId>, or
// the agent's main session).
func newCron(st store.CronStore, runner *agent.Runner, alias sessionkey.MainAlias, defaultAgent string) (*cron.Scheduler, error) {
	submit := func(ctx context.Context, j *cron.Job, runID string) error {
		agentID := j.AgentID
		if agentID == "" {
			agentID = defaultAgent
		}
		key := sessionkey.ToStoreKey(agentID, j.SessionKey(), alias.MainKey)
		if j.SessionTarget == "main" {
			key = sessionkey.MainKey(agentID, alias.MainKey)
			if alias.Scope == sessionkey.ScopeGlobal {
				key = sessionkey.GlobalKey
			}
		}
		msg := j.Payload.Message
		if j.Payload.Kind == "systemEvent" {
			msg = j.Payload.Text
		}
		_, _, err := runner.Submit(ctx, agent.Input{
			RunID: runID, SessionKey: key, AgentID: agentID, Message: msg,
			IdempotencyKey: runID + ":user", Channel: "cron",
			Provenance: &agent.Provenance{Kind: "cron"},
		})
		if err != nil {
			return fmt.Errorf("cron job %s: %w", j.ID, err)
		}
		return nil
	}
	return cron.New(cron.Config{Store: st, Submit: submit, NewID: uuid.NewString})
}
