package outbox

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"
)

// statements are one database's SQL for sqlDriver.
type statements struct {
	write, parked                      string
	records, streamRecords, checkpoint string
	advance, refused, delivered        string
	backlog, waiting                   string
	known, startAt, claim, countUpTo   string
	pruneBound, prune, sweepAttempts   string
	forgetCheckpoints, forgetAttempts  string
	size                               string
}

// sqlDriver runs a database's statements. The two databases differ only
// in their statements (the horizon above all), so one executor serves
// both; a database that needs other steps gets a driver type of its own.
type sqlDriver struct {
	db *sqlx.DB
	q  statements

	mu      sync.Mutex
	settles map[int]string // settleStatement's, by number of rows
}

func (d *sqlDriver) write(ctx context.Context, ext sqlx.ExtContext, r Record, at int64) error {
	_, err := ext.ExecContext(ctx, d.q.write, r.Key, r.Stream, r.Type, r.Body, at)
	return err
}

func (d *sqlDriver) records(ctx context.Context, sink string, from position, limit int) ([]recordRow, error) {
	var rows []recordRow
	err := d.db.SelectContext(ctx, &rows, d.q.records, sink, sink, from.Tx, from.ID, limit)
	return rows, err
}

func (d *sqlDriver) streamRecords(ctx context.Context, sink, stream string, from position, limit int) ([]recordRow, error) {
	var rows []recordRow
	err := d.db.SelectContext(ctx, &rows, d.q.streamRecords, sink, sink, stream, from.Tx, from.ID, limit)
	return rows, err
}

func (d *sqlDriver) checkpoint(ctx context.Context, sink string) (position, error) {
	var p position
	err := d.db.GetContext(ctx, &p, d.q.checkpoint, sink)
	if errors.Is(err, sql.ErrNoRows) {
		return position{}, nil
	}
	return p, err
}

func (d *sqlDriver) known(ctx context.Context, sink string) (bool, error) {
	var n int
	err := d.db.GetContext(ctx, &n, d.q.known, sink, sink)
	return n > 0, err
}

func (d *sqlDriver) startAt(ctx context.Context, at int64) (position, error) {
	var p position
	err := d.db.GetContext(ctx, &p, d.q.startAt, at)
	if errors.Is(err, sql.ErrNoRows) {
		return position{}, nil // no record: from the first
	}
	return p, err
}

func (d *sqlDriver) claim(ctx context.Context, sink string, at position) (bool, error) {
	res, err := d.db.ExecContext(ctx, d.q.claim, sink, at.Tx, at.ID, sink, sink)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (d *sqlDriver) countUpTo(ctx context.Context, at position) (int, error) {
	var n int
	err := d.db.GetContext(ctx, &n, d.q.countUpTo, at.Tx, at.ID)
	return n, err
}

func (d *sqlDriver) pruneBound(ctx context.Context) (position, bool, error) {
	var p position
	err := d.db.GetContext(ctx, &p, d.q.pruneBound)
	if errors.Is(err, sql.ErrNoRows) {
		return position{}, false, nil
	}
	return p, err == nil, err
}

func (d *sqlDriver) prune(ctx context.Context, from, bound position, before int64, limit int) (int, position, error) {
	rows, err := d.db.QueryxContext(ctx, d.q.prune, from.Tx, from.ID, bound.Tx, bound.ID, before, limit)
	if err != nil {
		return 0, position{}, err
	}
	defer rows.Close()
	n, last := 0, from
	for rows.Next() {
		var p position
		if err := rows.StructScan(&p); err != nil {
			return n, last, err
		}
		n++
		if last.before(p) {
			last = p
		}
	}
	return n, last, rows.Err()
}

func (d *sqlDriver) sweepAttempts(ctx context.Context) error {
	_, err := d.db.ExecContext(ctx, d.q.sweepAttempts)
	return err
}

func (d *sqlDriver) forget(ctx context.Context, sink string) error {
	if _, err := d.db.ExecContext(ctx, d.q.forgetAttempts, sink); err != nil {
		return err
	}
	_, err := d.db.ExecContext(ctx, d.q.forgetCheckpoints, sink)
	return err
}

func (d *sqlDriver) size(ctx context.Context) (count int, oldest int64, err error) {
	err = d.db.QueryRowxContext(ctx, d.q.size).Scan(&count, &oldest)
	return count, oldest, err
}

func (d *sqlDriver) advance(ctx context.Context, sink, stream string, to position) error {
	_, err := d.db.ExecContext(ctx, d.q.advance, sink, stream, to.Tx, to.ID)
	return err
}

// settle clears the refusals first: a failure between the two then
// offers a record again, at worst, and never leaves a settled record
// counted as waiting. One statement moves every stream's checkpoint, in
// the streams' order (two relays of a sink lock the rows alike).
func (d *sqlDriver) settle(ctx context.Context, sink string, done []settled) error {
	for _, s := range done {
		if s.cleared {
			if _, err := d.db.ExecContext(ctx, d.q.delivered, sink, s.at.ID); err != nil {
				return err
			}
		}
	}
	done = slices.Clone(done)
	slices.SortFunc(done, func(a, b settled) int {
		if c := strings.Compare(a.stream, b.stream); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(b.at.Tx, a.at.Tx), cmp.Compare(b.at.ID, a.at.ID))
	})
	// One row per stream, its latest position (PostgreSQL refuses an
	// upsert that meets a row twice).
	done = slices.CompactFunc(done, func(a, b settled) bool { return a.stream == b.stream })
	args := make([]any, 0, 4*len(done))
	for _, s := range done {
		args = append(args, sink, s.stream, s.at.Tx, s.at.ID)
	}
	_, err := d.db.ExecContext(ctx, d.settleStatement(len(done)), args...)
	return err
}

// settleStatement is advance for n rows, made once per n.
func (d *sqlDriver) settleStatement(n int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if q, ok := d.settles[n]; ok {
		return q
	}
	if d.settles == nil {
		d.settles = map[int]string{}
	}
	rows := strings.Repeat(advanceRow+", ", n-1) + advanceRow
	q := d.db.Rebind(advanceInto + rows + advanceUpdate)
	d.settles[n] = q
	return q
}

func (d *sqlDriver) backlog(ctx context.Context, sink string, from position) (count int, oldest int64, err error) {
	err = d.db.QueryRowxContext(ctx, d.q.backlog, sink, from.Tx, from.ID).Scan(&count, &oldest)
	return count, oldest, err
}

func (d *sqlDriver) refused(ctx context.Context, sink string, r refusal) error {
	p := 0
	if r.parked {
		p = 1
	}
	_, err := d.db.ExecContext(ctx, d.q.refused, sink, r.record, r.attempts, r.nextAt, r.lastError, p)
	return err
}

func (d *sqlDriver) delivered(ctx context.Context, sink string, record int64) error {
	_, err := d.db.ExecContext(ctx, d.q.delivered, sink, record)
	return err
}

func (d *sqlDriver) waiting(ctx context.Context, sink string) (int, error) {
	var n int
	err := d.db.GetContext(ctx, &n, d.q.waiting, sink)
	return n, err
}

func (d *sqlDriver) parked(ctx context.Context, sink string) ([]parkedRow, error) {
	var rows []parkedRow
	err := d.db.SelectContext(ctx, &rows, d.q.parked, sink, sink)
	return rows, err
}

// recordColumns are a recordRow's, from outbox_records r.
const recordColumns = `r.id, r.tx, r.key, r.stream, r.type, r.body, r.recorded_at`

// retryColumns are a recordRow's refusals, from outbox_attempts a joined
// on the record for the sink and not parked.
const retryColumns = `COALESCE(a.attempts, 0) AS retry_attempts, COALESCE(a.next_at, 0) AS retry_next_at`

// advance moves a checkpoint forward, never back: two relays of one sink
// deliver some records twice but skip none. Its parts let settle move
// several streams' in one statement, a row each.
const (
	advanceInto   = `INSERT INTO outbox_checkpoints (sink, stream, tx, id) VALUES `
	advanceRow    = `(?, ?, ?, ?)`
	advanceUpdate = `
ON CONFLICT (sink, stream) DO UPDATE SET tx = excluded.tx, id = excluded.id
WHERE (excluded.tx, excluded.id) > (outbox_checkpoints.tx, outbox_checkpoints.id)`
)

// dialect is what a database's statements differ in: the horizon, the
// condition on r.tx that a record's transaction can no longer be running,
// and how a position is compared and ordered (after and upTo take tx and
// id, in that order), which each database writes so that its planner
// reads a range of an index instead of every record.
type dialect struct {
	horizon     string
	after, upTo string // r is after, at or before a position (?, ?)
	order, last string // ORDER BY in delivery order, and backwards
}

// portable returns the statements, written once in the SQL both databases
// speak (ON CONFLICT, row values, RETURNING) with a driver's dialect. A
// driver binds them to its placeholders.
func portable(dl dialect) statements {
	q := statements{
		write: `INSERT INTO outbox_records (key, stream, type, body, recorded_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING`,
		parked: `SELECT ` + recordColumns + `, a.sink, a.attempts, a.last_error
FROM outbox_attempts a JOIN outbox_records r ON r.id = a.record
WHERE a.parked = 1 AND (? = '' OR a.sink = ?) ORDER BY {order}, a.sink`,
		// records reads a page of the records after a position (tx, id)
		// that no stream checkpoint passed, with their refusals: sink,
		// sink, tx, id, the horizon's condition, limit.
		records: `SELECT ` + recordColumns + `, ` + retryColumns + `
FROM outbox_records r
LEFT JOIN outbox_checkpoints c ON c.sink = ? AND c.stream = r.stream
LEFT JOIN outbox_attempts a ON a.sink = ? AND a.record = r.id AND a.parked = 0
WHERE {after} AND {horizon}
	AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))
ORDER BY {order} LIMIT ?`,
		// streamRecords is records for one stream: sink, sink, stream,
		// tx, id, the horizon's condition, limit. It reads the index on
		// (stream, tx, id).
		streamRecords: `SELECT ` + recordColumns + `, ` + retryColumns + `
FROM outbox_records r
LEFT JOIN outbox_checkpoints c ON c.sink = ? AND c.stream = r.stream
LEFT JOIN outbox_attempts a ON a.sink = ? AND a.record = r.id AND a.parked = 0
WHERE r.stream = ? AND {after} AND {horizon}
	AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))
ORDER BY {order} LIMIT ?`,
		checkpoint: `SELECT tx, id FROM outbox_checkpoints WHERE sink = ? AND stream = ''`,
		advance:    advanceInto + advanceRow + advanceUpdate,
		refused: `INSERT INTO outbox_attempts (sink, record, attempts, next_at, last_error, parked) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (sink, record) DO UPDATE SET attempts = excluded.attempts, next_at = excluded.next_at,
	last_error = excluded.last_error, parked = excluded.parked`,
		delivered: `DELETE FROM outbox_attempts WHERE sink = ? AND record = ?`,
		// backlog counts what records would read without the horizon and
		// the limit: sink, tx, id.
		backlog: `SELECT COUNT(*), COALESCE(MIN(r.recorded_at), 0)
FROM outbox_records r
LEFT JOIN outbox_checkpoints c ON c.sink = ? AND c.stream = r.stream
WHERE {after} AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))`,
		waiting: `SELECT COUNT(*) FROM outbox_attempts WHERE sink = ? AND parked = 0`,

		// known: sink, sink.
		known: `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM outbox_checkpoints WHERE sink = ? LIMIT 1) c)
	+ (SELECT COUNT(*) FROM (SELECT 1 FROM outbox_attempts WHERE sink = ? LIMIT 1) a)`,
		// startAt is, in one snapshot, the lower of just before the first
		// record under the horizon recorded at or after the instant, and
		// the last record under the horizon: the instant. No row: no
		// record under the horizon, start from the first.
		startAt: `SELECT tx, id FROM (
	SELECT tx, id FROM (SELECT r.tx, r.id - 1 AS id FROM outbox_records r
		WHERE r.recorded_at >= ? AND {horizon} ORDER BY {order} LIMIT 1) f
	UNION ALL
	SELECT tx, id FROM (SELECT r.tx, r.id FROM outbox_records r
		WHERE {horizon} ORDER BY {last} LIMIT 1) l
) s ORDER BY tx, id LIMIT 1`,
		// claim stores a new sink's checkpoint unless the sink is known:
		// sink, tx, id, sink, sink.
		claim: `INSERT INTO outbox_checkpoints (sink, stream, tx, id)
SELECT CAST(? AS TEXT), '', CAST(? AS BIGINT), CAST(? AS BIGINT)
WHERE NOT EXISTS (SELECT 1 FROM outbox_checkpoints WHERE sink = ?)
	AND NOT EXISTS (SELECT 1 FROM outbox_attempts WHERE sink = ?)
ON CONFLICT (sink, stream) DO NOTHING`,
		// countUpTo: tx, id.
		countUpTo: `SELECT COUNT(*) FROM outbox_records r WHERE {upTo}`,
		// pruneBound is the lowest sink checkpoint, every sink the outbox
		// knows counted (one with stream checkpoints or refusals only is
		// at the zero position: nothing is known to be passed).
		pruneBound: `SELECT COALESCE(c.tx, 0) AS tx, COALESCE(c.id, 0) AS id
FROM (SELECT sink FROM outbox_checkpoints UNION SELECT sink FROM outbox_attempts) k
LEFT JOIN outbox_checkpoints c ON c.sink = k.sink AND c.stream = ''
ORDER BY 1, 2 LIMIT 1`,
		// prune deletes a batch, the first in order after a position and
		// up to the bound, recorded before an instant: from tx, id, bound
		// tx, id, before, limit.
		prune: `DELETE FROM outbox_records WHERE id IN (
	SELECT r.id FROM outbox_records r
	WHERE {after} AND {upTo} AND r.recorded_at < ?
	ORDER BY {order} LIMIT ?)
RETURNING tx, id`,
		sweepAttempts: `DELETE FROM outbox_attempts
WHERE NOT EXISTS (SELECT 1 FROM outbox_records r WHERE r.id = outbox_attempts.record)`,
		forgetCheckpoints: `DELETE FROM outbox_checkpoints WHERE sink = ?`,
		forgetAttempts:    `DELETE FROM outbox_attempts WHERE sink = ?`,
		size:              `SELECT COUNT(*), COALESCE(MIN(recorded_at), 0) FROM outbox_records`,
	}
	fill := strings.NewReplacer("{horizon}", dl.horizon, "{after}", dl.after, "{upTo}", dl.upTo,
		"{order}", dl.order, "{last}", dl.last)
	for _, s := range q.all() {
		*s = fill.Replace(*s)
	}
	return q
}

// all are the statements, to rewrite each.
func (q *statements) all() []*string {
	return []*string{&q.write, &q.parked, &q.records, &q.streamRecords, &q.checkpoint, &q.advance, &q.refused,
		&q.delivered, &q.backlog, &q.waiting, &q.known, &q.startAt, &q.claim, &q.countUpTo, &q.pruneBound,
		&q.prune, &q.sweepAttempts, &q.forgetCheckpoints, &q.forgetAttempts, &q.size}
}

// rebind turns the statements' ? placeholders into bindType's.
func (q statements) rebind(bindType int) statements {
	for _, s := range q.all() {
		*s = sqlx.Rebind(bindType, *s)
	}
	return q
}
