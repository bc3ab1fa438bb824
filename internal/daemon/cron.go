package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// newCron builds the cron scheduler over the store's job tables; each run
// goes through admission into the job's session (cron:<jobId>, or the
// agent's main session).
func newCron(st store.CronStore, sessions store.Store, runner *agent.Runner, adm *admission.Admitter, alias sessionkey.MainAlias, defaultAgent string) (*cron.Scheduler, error) {
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
		in := agent.Input{
			RunID: runID, SessionKey: key, AgentID: agentID, Message: msg,
			IdempotencyKey: runID + ":user", Channel: "cron",
			Provenance: &agent.Provenance{Kind: "cron"},
		}
		// delivery {mode: "announce", channel, to}: an isolated job's reply
		// goes to that chat ("last": where the main session last talked).
		var d struct{ Mode, Channel, To, AccountID string }
		if len(j.Delivery) > 0 && json.Unmarshal(j.Delivery, &d) == nil && d.Mode == "announce" && j.SessionTarget != "main" {
			dc, err := deliveryTarget(ctx, sessions, sessionkey.MainKey(agentID, alias.MainKey), cmp.Or(d.Channel, "last"), d.To, d.AccountID)
			if err != nil {
				return fmt.Errorf("cron job %s: %w", j.ID, err)
			}
			if dc != nil {
				if err := deliverTo(ctx, sessions, key, dc, &in); err != nil {
					return fmt.Errorf("cron job %s: %w", j.ID, err)
				}
			}
		}
		if _, err := adm.Accept(ctx, admission.Request{Origin: admission.OriginCron, Input: in}); err != nil {
			return fmt.Errorf("cron job %s: %w", j.ID, err)
		}
		return nil
	}
	// A run's history row says how it ended, not only that it started.
	wait := func(ctx context.Context, runID string) (string, string, error) {
		run, done, err := runner.Wait(ctx, runID, -1)
		if err != nil {
			return "", "", err
		}
		if !done {
			return "", "", ctx.Err()
		}
		if run.Status == store.RunOK {
			return "ok", "", nil
		}
		// The reference's run history knows ok, error and skipped: a
		// timeout or an abort is an error, and says which.
		return "error", cmp.Or(run.Error, string(run.Status)), nil
	}
	return cron.New(cron.Config{Store: st, Submit: submit, Wait: wait, NewID: uuid.NewString})
}
