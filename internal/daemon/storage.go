package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// openedStore is the store the daemon serves from.
type openedStore struct {
	store.Store
	// name is what the sessions methods report as "path": the SQLite
	// file, or the PostgreSQL URL without its password.
	name string
	// ping checks that the database answers (readiness); nil when the
	// store is a local file.
	ping func(context.Context) error
}

// openStore opens the configured backend: SQLite in the state dir, or
// PostgreSQL, which this gateway may share with other gateway nodes.
func openStore(ctx context.Context, cfg *config.Config, stateDir string) (*openedStore, error) {
	ss := cfg.StorageSettings()
	if ss.Backend != config.BackendPostgres {
		path := filepath.Join(stateDir, DBFile)
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		return &openedStore{Store: st, name: path}, nil
	}
	st, err := postgres.Open(ctx, ss.URL, postgres.Options{})
	if err != nil {
		return nil, fmt.Errorf("daemon: %s: %w", ss.Display, err)
	}
	return &openedStore{Store: st, name: ss.Display, ping: st.Ping}, nil
}

// storeCheck is doctor's "store" line: the SQLite file's integrity, or
// whether PostgreSQL answers and its schema is one this binary knows; on
// PostgreSQL it also returns the live gateway nodes.
func storeCheck(ctx context.Context, cfg *config.Config, stateDir string) (Check, []string) {
	ss := cfg.StorageSettings()
	if ss.Backend == config.BackendPostgres {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := postgres.Check(ctx, ss.URL)
		switch {
		case errors.Is(err, postgres.ErrNewerSchema):
			return Check{Name: "store", Status: CheckFail, Detail: ss.Display + ": " + err.Error(), Fix: "run the newer switchboard that migrated this database"}, nil
		case err != nil:
			return Check{Name: "store", Status: CheckFail, Detail: ss.Display + ": " + err.Error(),
				Fix: "check that PostgreSQL runs and that storage.url (or " + config.EnvDatabaseURL + ") names a database this user may use"}, nil
		case res.SchemaVersion == 0:
			return Check{Name: "store", Status: CheckOK, Detail: ss.Display + " reachable; serve creates the schema"}, nil
		default:
			return Check{Name: "store", Status: CheckOK, Detail: fmt.Sprintf("%s reachable (schema %d)", ss.Display, res.SchemaVersion)}, res.LiveNodes
		}
	}
	db := filepath.Join(stateDir, DBFile)
	res, err := sqlite.Check(ctx, db)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Check{Name: "store", Status: CheckOK, Detail: "no database yet; serve creates " + db}, nil
	case errors.Is(err, sqlite.ErrNewerSchema):
		return Check{Name: "store", Status: CheckFail, Detail: err.Error(), Fix: "run the newer switchboard that wrote this database"}, nil
	case err != nil:
		return Check{Name: "store", Status: CheckFail, Detail: err.Error(), Fix: "restore " + db + " from a backup, or move it away to start empty"}, nil
	default:
		return Check{Name: "store", Status: CheckOK, Detail: fmt.Sprintf("%s intact (schema %d)", db, res.SchemaVersion)}, nil
	}
}
