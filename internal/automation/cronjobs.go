package automation

import (
	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// NewCron builds the cron scheduler over the store's job tables; each run
// goes through admission into the job's session (cron:<jobId>, or the
// agent's main session).
func NewCron(st store.CronStore, sessions store.Store, runner Runner, adm Admitter, alias sessionkey.MainAlias, defaultAgent string) (*cron.Scheduler, error) {
	return cron.New(cron.Config{Store: st, Submit: CronSubmit(sessions, adm, alias, defaultAgent), Wait: CronWait(runner),
		NewID: uuid.NewString})
}
