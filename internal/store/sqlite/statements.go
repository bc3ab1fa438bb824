package sqlite

import (
	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// statements are the store's statements that sqlstore builds by calls
// (the others are constants). They are built once, on the first Open
// (stmts), not at process start: a gateway on PostgreSQL links this package
// but never opens it, and package-level values built by calls would run in
// the package's initialiser in every process. Open keeps the pointer in
// Store.q. TestStatementsMatchSQLStore pins each text to the expression it
// comes from.
type statements struct {
	// insertSession and upsertSession write sqlstore.SessionCols, then the
	// key class, which is written with the row and never changes: the key
	// is the row's identity.
	insertSession, upsertSession string
	// claimCronTick claims a job's due tick (sqlstore's ClaimCronTick).
	claimCronTick string
}

// stmts is the package's statements, built on the first Get (Open's).
var stmts = lazy.Value[*statements]{New: buildStatements}

// buildStatements builds the statements; see statements.
func buildStatements() *statements {
	return &statements{
		insertSession: sqlstore.SQLite.InsertSession("key_class"),
		upsertSession: sqlstore.UpsertSession("key_class"),
		claimCronTick: sqlstore.SQLite.ClaimCronTick(),
	}
}
