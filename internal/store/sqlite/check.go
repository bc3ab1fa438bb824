package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// CheckResult is what Check found in a database file.
type CheckResult struct {
	// SchemaVersion is the migration the file is at; 0 for a new file.
	SchemaVersion int
	// BinaryVersion is the migration this binary brings files to.
	BinaryVersion int
	// PageSize is the file's page size, fixed when it was created;
	// NewPageSize is the one this binary creates files with (pageSize).
	// A file of larger pages makes every commit write more (docs/state.md
	// says how to convert one).
	PageSize, NewPageSize int
}

// Check opens the database at path read-only, without migrating it, and
// runs SQLite's quick integrity check. It is safe while a gateway has the
// file open. A missing file is reported with os.ErrNotExist.
func Check(ctx context.Context, path string) (CheckResult, error) {
	res := CheckResult{BinaryVersion: schemaVersion(), NewPageSize: pageSize}
	if _, err := os.Stat(path); err != nil {
		return res, fmt.Errorf("sqlite.Check: %w", err)
	}
	q := url.Values{"mode": {"ro"}, "_pragma": {fmt.Sprintf("busy_timeout(%d)", (5 * time.Second).Milliseconds())}}
	db := sql.OpenDB(connector{dsn: "file:" + path + "?" + q.Encode()})
	defer db.Close()
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return res, fmt.Errorf("sqlite.Check: %w", err)
	}
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return res, fmt.Errorf("sqlite.Check: %w", err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return res, fmt.Errorf("sqlite.Check: %w", err)
	}
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return res, fmt.Errorf("sqlite.Check: integrity check failed: %s", strings.Join(problems, "; "))
	}
	err = db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&res.SchemaVersion)
	if err != nil && !strings.Contains(err.Error(), "no such table") {
		return res, fmt.Errorf("sqlite.Check: schema version: %w", err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&res.PageSize); err != nil {
		return res, fmt.Errorf("sqlite.Check: page size: %w", err)
	}
	if res.SchemaVersion > res.BinaryVersion {
		return res, fmt.Errorf("sqlite.Check: version %d, binary knows %d: %w", res.SchemaVersion, res.BinaryVersion, ErrNewerSchema)
	}
	return res, nil
}
