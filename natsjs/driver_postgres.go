package natsjs

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// postgresDriver is the inbox on PostgreSQL. An insert that meets another
// transaction's uncommitted row for the same message waits for it, then
// does nothing if it committed: the message is handled by one of them.
type postgresDriver struct{}

// postgresSchema is the inbox table: a row per message a consumer handled.
const postgresSchema = `CREATE TABLE natsjs_inbox (
	consumer   TEXT   NOT NULL,
	message_id TEXT   NOT NULL,
	handled_at BIGINT NOT NULL,
	PRIMARY KEY (consumer, message_id)
)`

// postgresIndex serves Forget.
const postgresIndex = `CREATE INDEX natsjs_inbox_handled_at ON natsjs_inbox (consumer, handled_at)`

func (postgresDriver) record(ctx context.Context, tx *sqlx.Tx, consumer, id string, at int64) (bool, error) {
	n, err := rowsAffected(tx.ExecContext(ctx, `INSERT INTO natsjs_inbox (consumer, message_id, handled_at) VALUES ($1, $2, $3)
ON CONFLICT (consumer, message_id) DO NOTHING`, consumer, id, at))
	return n == 1, err
}

func (postgresDriver) handled(ctx context.Context, q sqlx.QueryerContext, consumer, id string) (bool, error) {
	var found bool
	err := sqlx.GetContext(ctx, q, &found, `SELECT EXISTS (SELECT 1 FROM natsjs_inbox WHERE consumer = $1 AND message_id = $2)`, consumer, id)
	return found, err
}

func (postgresDriver) forget(ctx context.Context, db sqlx.ExecerContext, consumer string, before int64) (int64, error) {
	return rowsAffected(db.ExecContext(ctx, `DELETE FROM natsjs_inbox WHERE consumer = $1 AND handled_at < $2`, consumer, before))
}
