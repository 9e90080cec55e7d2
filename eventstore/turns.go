package eventstore

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// tryTurnsPostgres takes, without waiting, the turns (see queries.lock)
// of the streams in $1 that no other transaction holds, and returns the
// others. A turn tx holds already is taken again at once.
const tryTurnsPostgres = `SELECT DISTINCT s FROM unnest($1::text[]) AS s
WHERE NOT pg_try_advisory_xact_lock(hashtextextended('eventstore/' || s, 0))`

// TryTurnsTx takes in tx, without waiting, the turns of those of streams
// that no other transaction holds, as an append in tx would (see
// [Store.AppendTx]), and returns the others: the streams another
// transaction is appending to at this moment. tx keeps the turns it took
// until it ends, so its appends to those streams wait for no one, and
// the versions it reads of them from then on stay the latest until it
// appends. On SQLite every turn is tx's already (its immediate
// transaction holds the database's only write lock): busy is always
// empty.
//
// It is for a transaction that must not wait for a turn because it holds
// rows another appender may need before it lets its turn go — the items
// of a to-do list batch locked FOR UPDATE, which an appender's
// [WithInTransaction] projection removes. Waiting there is a deadlock:
// PostgreSQL ends it after its deadlock_timeout by failing one of the
// two. Append only to the streams taken, and leave the busy ones for
// later.
func (s *Store) TryTurnsTx(ctx context.Context, tx *sqlx.Tx, streams []string) (busy []string, err error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: take the turns of %d streams: transaction must not be nil", ErrInvalidArgument, len(streams))
	}
	if d := sqldb.DialectOf(tx); d != s.dialect {
		return nil, fmt.Errorf("%w: take the turns of %d streams: transaction is on %s, the store on %s", ErrInvalidArgument, len(streams), d, s.dialect)
	}
	for i, name := range streams {
		if name == "" {
			return nil, fmt.Errorf("%w: take the turns of %d streams: stream %d has an empty name", ErrInvalidArgument, len(streams), i)
		}
	}
	if s.dialect != sqldb.Postgres || len(streams) == 0 {
		return nil, nil
	}
	if err := tx.SelectContext(ctx, &busy, tryTurnsPostgres, streams); err != nil {
		return nil, fmt.Errorf("eventstore: take the turns of %d streams: %w", len(streams), err)
	}
	return busy, nil
}
