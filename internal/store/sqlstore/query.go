package sqlstore

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Query builds a statement whose filters are known only at run time, with
// d's placeholders.
type Query struct {
	d    Dialect
	b    strings.Builder
	args []any
}

// NewQuery starts a query with text head (no placeholders).
func (d Dialect) NewQuery(head string) *Query {
	q := &Query{d: d}
	q.b.Grow(len(head) + 128)
	q.b.WriteString(head)
	return q
}

// Write appends text with no placeholders.
func (q *Query) Write(text string) { q.b.WriteString(text) }

// Add appends text whose ? placeholders take args in order.
func (q *Query) Add(text string, args ...any) {
	for i := 0; i < len(text); i++ {
		if text[i] != '?' {
			q.b.WriteByte(text[i])
			continue
		}
		if q.d == SQLite {
			q.b.WriteByte('?')
		} else {
			q.b.WriteByte('$')
			q.b.WriteString(strconv.Itoa(len(q.args) + 1))
		}
		q.args = append(q.args, args[0])
		args = args[1:]
	}
}

// AddIn appends " AND col IN vals" as one parameter whatever the number of
// values (so one statement): a JSON array read with json_each in SQLite, an
// array with = ANY in PostgreSQL.
func (q *Query) AddIn(col string, vals []string) error {
	if q.d == Postgres {
		q.Add(` AND `+col+` = ANY(?)`, vals)
		return nil
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return err
	}
	q.Add(` AND `+col+` IN (SELECT value FROM json_each(?))`, string(b))
	return nil
}

// LimitOffset appends a LIMIT (when limit > 0) and an OFFSET (when
// offset > 0).
func (q *Query) LimitOffset(limit, offset int) {
	if q.d == SQLite {
		// SQLite's OFFSET needs a LIMIT; -1 is none.
		switch {
		case limit > 0:
			q.Add(` LIMIT ? OFFSET ?`, limit, max(offset, 0))
		case offset > 0:
			q.Add(` LIMIT -1 OFFSET ?`, offset)
		}
		return
	}
	if limit > 0 {
		q.Add(` LIMIT ?`, limit)
	}
	if offset > 0 {
		q.Add(` OFFSET ?`, offset)
	}
}

// String returns the statement's text.
func (q *Query) String() string { return q.b.String() }

// Args returns the statement's arguments.
func (q *Query) Args() []any { return q.args }

// AddOneOf appends " AND col = ?" for one value (an equality lets the
// planner use an index for order) and AddIn's form for more; nothing for
// none.
func (q *Query) AddOneOf(col string, vals []string) error {
	switch len(vals) {
	case 0:
		return nil
	case 1:
		q.Add(` AND `+col+` = ?`, vals[0])
		return nil
	}
	return q.AddIn(col, vals)
}

// Strings converts a slice of a string type to []string.
func Strings[S ~string](vs []S) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
