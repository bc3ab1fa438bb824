package daemon

import (
	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/automation"
	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// newCron builds the cron scheduler over the store's job tables; each run
// goes through admission into the job's session (cron:<jobId>, or the
// agent's main session).
func newCron(st store.CronStore, sessions store.Store, runner *agent.Runner, adm *admission.Admitter, alias sessionkey.MainAlias, defaultAgent string) (*cron.Scheduler, error) {
	return cron.New(cron.Config{Store: st, Submit: automation.CronSubmit(sessions, adm, alias, defaultAgent), Wait: automation.CronWait(runner),
		NewID: uuid.NewString})
}
