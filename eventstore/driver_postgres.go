package eventstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"
)

// postgresDriver is the store on PostgreSQL. A stream's turn is a
// transaction-scoped advisory lock on a hash of its name: it works in a
// caller's transaction too (AppendTx), where a lost race could not be
// retried, and costs one round trip. Lists travel as arrays, unnested.
type postgresDriver struct{ sqlDriver }

// postgresStatements are the shared statements in $n placeholders.
var postgresStatements = portable().rebind(sqlx.DOLLAR)

// insertManyChunkPostgres bounds the rows of one insert, which takes five
// arrays whatever their length, to keep its memory bounded.
const insertManyChunkPostgres = 5000

func (postgresDriver) takeTurn(ctx context.Context, tx *sqlx.Tx, stream string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('eventstore/' || $1::text, 0))`, stream)
	return err
}

// takeTurns locks in the order of the lock keys. The sorted subquery is
// not flattened into the outer query, so the locks are taken in its
// order.
func (postgresDriver) takeTurns(ctx context.Context, tx *sqlx.Tx, streams []string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(k) FROM (
	SELECT DISTINCT hashtextextended('eventstore/' || s, 0) AS k FROM unnest($1::text[]) AS s ORDER BY k) AS keys`, streams)
	return err
}

func (postgresDriver) tryTurns(ctx context.Context, tx *sqlx.Tx, streams []string) ([]string, error) {
	var busy []string
	err := tx.SelectContext(ctx, &busy, `SELECT DISTINCT s FROM unnest($1::text[]) AS s
WHERE NOT pg_try_advisory_xact_lock(hashtextextended('eventstore/' || s, 0))`, streams)
	return busy, err
}

func (postgresDriver) versions(ctx context.Context, tx *sqlx.Tx, streams []string) (map[string]int64, error) {
	rows, err := tx.QueryxContext(ctx, `SELECT s.name, (SELECT COALESCE(MAX(version), 0) FROM eventstore_events WHERE stream = s.name)
FROM unnest($1::text[]) AS s(name)`, streams)
	if err != nil {
		return nil, err
	}
	return scanVersions(rows, len(streams))
}

func (postgresDriver) insertChunk() int { return insertManyChunkPostgres }

// insertMany sends five arrays: streams, versions, types, data (as text,
// cast to JSONB here) and the one recording time.
func (postgresDriver) insertMany(ctx context.Context, tx *sqlx.Tx, rows []eventRow, at int64) (*sqlx.Rows, error) {
	streams, versions := make([]string, len(rows)), make([]int64, len(rows))
	types, data := make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		streams[i], versions[i], types[i], data[i] = r.stream, r.version, r.typ, r.data
	}
	return tx.QueryxContext(ctx, insertEvents+`
SELECT e.stream, e.version, e.type, e.data::jsonb, $5 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS e(stream, version, type, data)
RETURNING stream, version, position`, streams, versions, types, data, at)
}

func (postgresDriver) isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505" // unique_violation
}

func (postgresDriver) loadMany(ctx context.Context, q sqlx.QueryerContext, streams []string) (*sqlx.Rows, error) {
	return q.QueryxContext(ctx, `SELECT e.stream, e.position, e.version, e.type, e.data, e.recorded_at FROM eventstore_events e WHERE e.stream = ANY($1::text[]) ORDER BY e.stream, e.version`, streams)
}
