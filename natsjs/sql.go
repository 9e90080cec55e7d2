package natsjs

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// statements are one database's SQL for sqlDriver.
type statements struct {
	record, handled, forget string
}

// portable returns the statements, written once in the SQL both databases
// speak (ON CONFLICT, EXISTS), with ? placeholders.
func portable() statements {
	return statements{
		record: `INSERT INTO natsjs_inbox (consumer, message_id, handled_at) VALUES (?, ?, ?)
ON CONFLICT (consumer, message_id) DO NOTHING`,
		handled: `SELECT EXISTS (SELECT 1 FROM natsjs_inbox WHERE consumer = ? AND message_id = ?)`,
		forget:  `DELETE FROM natsjs_inbox WHERE consumer = ? AND handled_at < ?`,
	}
}

// rebind turns the statements' ? placeholders into bindType's.
func (q statements) rebind(bindType int) statements {
	for _, s := range []*string{&q.record, &q.handled, &q.forget} {
		*s = sqlx.Rebind(bindType, *s)
	}
	return q
}

// sqlDriver runs a database's statements. The two databases differ only
// in their statements' placeholders, so one executor serves both; a
// database that needs other steps gets a driver type of its own.
type sqlDriver struct {
	q statements
}

func (d sqlDriver) record(ctx context.Context, tx *sqlx.Tx, consumer, id string, at int64) (bool, error) {
	n, err := rowsAffected(tx.ExecContext(ctx, d.q.record, consumer, id, at))
	return n == 1, err
}

func (d sqlDriver) handled(ctx context.Context, q sqlx.QueryerContext, consumer, id string) (bool, error) {
	var found bool
	err := sqlx.GetContext(ctx, q, &found, d.q.handled, consumer, id)
	return found, err
}

func (d sqlDriver) forget(ctx context.Context, db sqlx.ExecerContext, consumer string, before int64) (int64, error) {
	return rowsAffected(db.ExecContext(ctx, d.q.forget, consumer, before))
}

// rowsAffected is what an insert or delete changed, by its result.
func rowsAffected(res interface{ RowsAffected() (int64, error) }, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
