// Package sqlstore owns what the SQLite and PostgreSQL stores share: the
// text of their common statements, reads and writes, written once with ?
// placeholders and rewritten for PostgreSQL by Dialect.Q (those that test a
// boolean flag, or write a session row with each store's derived columns,
// are made per dialect by Dialect's methods), their column lists, one
// scanner and one argument list per row type (and the arguments of a run's
// end and of appended messages), a builder for the filtered queries they
// assemble at run time, and Reads, the reading methods they answer alike
// (each store embeds it over its own connections). Statements that differ
// in more than that (locking reads, the run start's fence and PostgreSQL's
// one-statement run end, full-text search, vectors, batched writes) and the
// transactions that run the writes stay in their store.
//
// Only internal/store/sqlite and internal/store/postgres import it.
package sqlstore

import (
	"strconv"
	"strings"
	"time"
)

// Scanner is one row to read: *sql.Row, *sql.Rows, pgx.Row or pgx.Rows.
type Scanner interface{ Scan(dest ...any) error }

// Dialect is the SQL a store speaks.
type Dialect uint8

// The dialects.
const (
	// SQLite numbers its placeholders ? (or ?N).
	SQLite Dialect = iota
	// Postgres numbers its placeholders $N.
	Postgres
)

// Q returns q, written with ? placeholders (or ?N to name the N-th
// argument), in d's placeholders: unchanged for SQLite; for PostgreSQL each
// ?N becomes $N and each bare ? the next $N, counting from 1. A ? inside a
// quoted string or identifier is left alone. Stores call it once, for their
// package-level statements.
func (d Dialect) Q(q string) string {
	if d == SQLite || !strings.Contains(q, "?") {
		return q
	}
	var (
		b     strings.Builder
		n     int
		quote byte
	)
	b.Grow(len(q) + 16)
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			b.WriteByte('$')
			if j > i+1 {
				b.WriteString(q[i+1 : j])
			} else {
				n++
				b.WriteString(strconv.Itoa(n))
			}
			i = j - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// True is d's literal for a condition that always holds, the start of a
// WHERE clause that filters add to.
func (d Dialect) True() string {
	if d == SQLite {
		return "1"
	}
	return "true"
}

// Is is d's test that the boolean column col holds (SQLite stores flags as
// 0 or 1).
func (d Dialect) Is(col string) string {
	if d == SQLite {
		return col + " = 1"
	}
	return col
}

// IsNot is d's test that the boolean column col does not hold.
func (d Dialect) IsNot(col string) string {
	if d == SQLite {
		return col + " = 0"
	}
	return "NOT " + col
}

// Bool is b as an argument for a boolean column of d: 0 or 1 for SQLite.
func (d Dialect) Bool(b bool) any {
	if d != SQLite {
		return b
	}
	if b {
		return int64(1)
	}
	return int64(0)
}

// Qualify returns the column list cols (names separated by commas) with
// each name qualified by table, for statements that join.
func Qualify(table, cols string) string {
	names := colNames(cols)
	for i, c := range names {
		names[i] = table + "." + c
	}
	return strings.Join(names, ", ")
}

// colNames splits a column list into its names.
func colNames(cols string) []string {
	return strings.Split(strings.Join(strings.Fields(cols), ""), ",")
}

// ToMs converts t to unix milliseconds, the stored form of every time; the
// zero time is 0.
func ToMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMs converts unix milliseconds to a UTC time; 0 is the zero time.
func FromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
