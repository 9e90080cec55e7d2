package natsjs

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// sqliteDriver is the inbox on SQLite. Its immediate transactions hold
// the database's write lock from the first statement, so two consumers
// recording one message never both see it as new.
type sqliteDriver struct{}

// sqliteSchema is the inbox table: a row per message a consumer handled.
const sqliteSchema = `CREATE TABLE natsjs_inbox (
	consumer   TEXT    NOT NULL,
	message_id TEXT    NOT NULL,
	handled_at INTEGER NOT NULL,
	PRIMARY KEY (consumer, message_id)
) WITHOUT ROWID`

// sqliteIndex serves Forget.
const sqliteIndex = `CREATE INDEX natsjs_inbox_handled_at ON natsjs_inbox (consumer, handled_at)`

func (sqliteDriver) record(ctx context.Context, tx *sqlx.Tx, consumer, id string, at int64) (bool, error) {
	n, err := rowsAffected(tx.ExecContext(ctx, `INSERT INTO natsjs_inbox (consumer, message_id, handled_at) VALUES (?, ?, ?)
ON CONFLICT (consumer, message_id) DO NOTHING`, consumer, id, at))
	return n == 1, err
}

func (sqliteDriver) handled(ctx context.Context, q sqlx.QueryerContext, consumer, id string) (bool, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, `SELECT COUNT(*) FROM natsjs_inbox WHERE consumer = ? AND message_id = ?`, consumer, id)
	return n > 0, err
}

func (sqliteDriver) forget(ctx context.Context, db sqlx.ExecerContext, consumer string, before int64) (int64, error) {
	return rowsAffected(db.ExecContext(ctx, `DELETE FROM natsjs_inbox WHERE consumer = ? AND handled_at < ?`, consumer, before))
}
