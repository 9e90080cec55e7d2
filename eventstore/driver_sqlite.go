package eventstore

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// sqliteDriver is the store on SQLite. Its immediate transactions hold
// the database's only write lock from their first statement, so every
// turn is the transaction's already and taking one costs nothing. Lists of
// stream names travel as one JSON array, read with json_each.
type sqliteDriver struct{ sqlDriver }

// sqliteStatements are the shared statements as written, in ?
// placeholders.
var sqliteStatements = portable()

// insertManyChunkSQLite bounds the rows of one insert: five parameters a
// row, and SQLite takes at most 32,766 in all.
const insertManyChunkSQLite = 1000

func (sqliteDriver) takeTurn(context.Context, *sqlx.Tx, string) error { return nil }

func (sqliteDriver) takeTurns(context.Context, *sqlx.Tx, []string) error { return nil }

func (sqliteDriver) tryTurns(context.Context, *sqlx.Tx, []string) ([]string, error) {
	return nil, nil
}

func (sqliteDriver) versions(ctx context.Context, tx *sqlx.Tx, streams []string) (map[string]int64, error) {
	names, err := json.Marshal(streams)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryxContext(ctx, `SELECT s.value, (SELECT COALESCE(MAX(version), 0) FROM eventstore_events WHERE stream = s.value)
FROM json_each(?) AS s`, string(names))
	if err != nil {
		return nil, err
	}
	return scanVersions(rows, len(streams))
}

func (sqliteDriver) insertChunk() int { return insertManyChunkSQLite }

func (sqliteDriver) insertMany(ctx context.Context, tx *sqlx.Tx, rows []eventRow, at int64) (*sqlx.Rows, error) {
	const row = "(?, ?, ?, ?, ?)"
	var b strings.Builder
	b.Grow(128 + (len(row)+2)*len(rows))
	b.WriteString(insertEvents + ` VALUES `)
	args := make([]any, 0, 5*len(rows))
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
		args = append(args, r.stream, r.version, r.typ, r.data, at)
	}
	b.WriteString(` RETURNING stream, version, position`)
	return tx.QueryxContext(ctx, b.String(), args...)
}

func (sqliteDriver) isUniqueViolation(err error) bool {
	return sqldb.IsSQLiteUniqueViolation(err)
}

func (sqliteDriver) loadMany(ctx context.Context, q sqlx.QueryerContext, streams []string) (*sqlx.Rows, error) {
	names, err := json.Marshal(streams)
	if err != nil {
		return nil, err
	}
	return q.QueryxContext(ctx, `SELECT e.stream, e.position, e.version, e.type, e.data, e.recorded_at FROM eventstore_events e WHERE e.stream IN (SELECT value FROM json_each(?)) ORDER BY e.stream, e.version`, string(names))
}
