package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/statedir"
	"github.com/switchboardhq/switchboard/internal/store/pgmigrate"
)

// MigrateOptions says what Migrate copies. Zero values mean the process
// environment, the default config, the state dir's SQLite database and the
// configured PostgreSQL URL.
type MigrateOptions struct {
	Env        settings.Env
	ConfigPath string
	// From is the SQLite file to copy.
	From string
	// To is the PostgreSQL URL to copy into.
	To string
}

// MigrateResult is Migrate's outcome: both ends (the URL without its
// password) and each table's counts and checksums.
type MigrateResult struct {
	From, To string
	Report   pgmigrate.Report
}

// Migrate copies the SQLite state into PostgreSQL and verifies the copy
// ("switchboard migrate"). It refuses while a gateway runs on the state
// dir. The result carries the report also when the verification fails.
func Migrate(ctx context.Context, opts MigrateOptions) (MigrateResult, error) {
	env := opts.Env
	if env == nil {
		env = settings.OSEnv
	}
	set, _, err := settings.Load(opts.ConfigPath, env)
	if err != nil {
		return MigrateResult{}, err
	}
	stateDir := set.StateDir
	from := opts.From
	if from == "" {
		from = filepath.Join(stateDir, DBFile)
		rec, running, _ := statedir.Running(stateDir)
		if running {
			return MigrateResult{}, fmt.Errorf("migrate: a gateway runs on %s (pid %d): stop it first", stateDir, rec.PID)
		}
	}
	to := opts.To
	if to == "" {
		ss := set.Storage
		if ss.Backend != settings.BackendPostgres {
			return MigrateResult{}, errors.New("migrate: no PostgreSQL database: pass --to postgres://… or set storage.url or " + settings.EnvDatabaseURL)
		}
		to = ss.URL
	}
	res := MigrateResult{From: from, To: settings.DisplayDatabaseURL(to)}
	res.Report, err = pgmigrate.Copy(ctx, from, to)
	if err != nil {
		return res, fmt.Errorf("migrate: %w", err)
	}
	return res, nil
}
