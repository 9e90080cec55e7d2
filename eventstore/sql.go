package eventstore

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// statements are one database's SQL for sqlDriver.
type statements struct {
	version, insert, load string
}

// insertEvents begins every insert of events, one or many.
const insertEvents = `INSERT INTO eventstore_events (stream, version, type, data, recorded_at)`

// portable returns the statements both databases take as they are, with
// ? placeholders.
func portable() statements {
	return statements{
		version: `SELECT COALESCE(MAX(version), 0) FROM eventstore_events WHERE stream = ?`,
		insert:  insertEvents + ` VALUES (?, ?, ?, ?, ?) RETURNING position`,
		load:    `SELECT position, version, type, data, recorded_at FROM eventstore_events WHERE stream = ? AND version >= ? ORDER BY version`,
	}
}

// rebind turns the statements' ? placeholders into bindType's.
func (q statements) rebind(bindType int) statements {
	for _, s := range []*string{&q.version, &q.insert, &q.load} {
		*s = sqlx.Rebind(bindType, *s)
	}
	return q
}

// sqlDriver is the part of a driver that both databases run alike, with
// their statements; each database's driver embeds it and adds what it
// does its own way (turns, lists of streams, inserts of many rows).
type sqlDriver struct {
	q statements
}

func (d sqlDriver) version(ctx context.Context, q sqlx.QueryerContext, stream string) (int64, error) {
	var v int64
	err := sqlx.GetContext(ctx, q, &v, d.q.version, stream)
	return v, err
}

func (d sqlDriver) insert(ctx context.Context, tx *sqlx.Tx, e eventRow, at int64) (int64, error) {
	var position int64
	err := tx.QueryRowxContext(ctx, d.q.insert, e.stream, e.version, e.typ, e.data, at).Scan(&position)
	return position, err
}

func (d sqlDriver) load(ctx context.Context, q sqlx.QueryerContext, stream string, from int64) (*sqlx.Rows, error) {
	return q.QueryxContext(ctx, d.q.load, stream, from)
}

// scanVersions reads the (stream, version) rows of driver.versions.
func scanVersions(rows *sqlx.Rows, n int) (map[string]int64, error) {
	defer rows.Close()
	current := make(map[string]int64, n)
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return nil, err
		}
		current[name] = v
	}
	return current, rows.Err()
}
