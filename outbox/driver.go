package outbox

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"
)

// driver is one database's storage of the outbox. The outbox and its
// relays call it and never ask which database they are on; each
// database's statements live in its own file (driver_sqlite.go,
// driver_postgres.go), and driver_test.go holds every driver to this
// contract. Records are ordered by (tx, id) (see the package
// documentation); a position is such a pair.
type driver interface {
	// write stores a record in ext, the deciding transaction, at the
	// instant at; a key stored already is left as it was.
	write(ctx context.Context, ext sqlx.ExtContext, key, stream, typ string, body []byte, at int64) error
	// records returns, in (tx, id) order, up to limit records after from
	// whose stream's checkpoint for sink does not pass them, written by
	// transactions none of which can still be running: a record that
	// commits later must come after every position records returned.
	// Each carries sink's refusals of it (none for a parked one).
	records(ctx context.Context, sink string, from position, limit int) ([]recordRow, error)
	// streamRecords is records for one stream: up to limit of stream's
	// records after both from and the stream's checkpoint for sink, in
	// (tx, id) order, with the same horizon.
	streamRecords(ctx context.Context, sink, stream string, from position, limit int) ([]recordRow, error)
	// checkpoint returns sink's checkpoint, the zero position for none.
	checkpoint(ctx context.Context, sink string) (position, error)
	// advance moves the checkpoint of sink's stream ("" for the sink's
	// own) to to, never back.
	advance(ctx context.Context, sink, stream string, to position) error
	// settle records that sink is done with each record given (taken or
	// parked): its stream's checkpoint moves to it, never back, and its
	// refusals are forgotten when cleared says so. Several records of one
	// stream may be given.
	settle(ctx context.Context, sink string, done []settled) error
	// backlog counts what records would return after from without the
	// horizon and the limit, and the oldest of them's recorded_at (0 for
	// none).
	backlog(ctx context.Context, sink string, from position) (count int, oldest int64, err error)

	// refused stores a refusal of record by sink; parked ones stay.
	refused(ctx context.Context, sink string, record int64, attempts int, nextAt int64, lastError string, parked bool) error
	// delivered forgets sink's refusals of record.
	delivered(ctx context.Context, sink string, record int64) error
	// waiting counts sink's refusals of records not parked.
	waiting(ctx context.Context, sink string) (int, error)
	// parked lists the records sink parked ("" for every sink's), oldest
	// first.
	parked(ctx context.Context, sink string) ([]parkedRow, error)
}

// position is a record's place in delivery order.
type position struct {
	Tx int64 `db:"tx"`
	ID int64 `db:"id"`
}

// before reports whether p comes before q in delivery order.
func (p position) before(q position) bool {
	return p.Tx < q.Tx || p.Tx == q.Tx && p.ID < q.ID
}

// justBefore is the last position before p: every position before p is
// at or before it, so a checkpoint there passes all of them and not p.
func (p position) justBefore() position { return position{p.Tx, p.ID - 1} }

// settled is a record a sink is done with, for settle.
type settled struct {
	stream  string
	at      position
	cleared bool // the record had refusals: forget them
}

// parkedRow is a parked record as read back.
type parkedRow struct {
	recordRow
	Sink      string `db:"sink"`
	Attempts  int    `db:"attempts"`
	LastError string `db:"last_error"`
}

// statements are one database's SQL for sqlDriver.
type statements struct {
	write, parked                      string
	records, streamRecords, checkpoint string
	advance, refused, delivered        string
	backlog, waiting                   string
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

func (d *sqlDriver) write(ctx context.Context, ext sqlx.ExtContext, key, stream, typ string, body []byte, at int64) error {
	_, err := ext.ExecContext(ctx, d.q.write, key, stream, typ, body, at)
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

func (d *sqlDriver) refused(ctx context.Context, sink string, record int64, attempts int, nextAt int64, lastError string, parked bool) error {
	p := 0
	if parked {
		p = 1
	}
	_, err := d.db.ExecContext(ctx, d.q.refused, sink, record, attempts, nextAt, lastError, p)
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

// portable returns the statements, written once in the SQL both databases
// speak (ON CONFLICT, row values), with a driver's horizon: the condition
// on r.tx that a record's transaction can no longer be running. A driver
// binds them to its placeholders.
func portable(horizon string) statements {
	q := statements{
		write: `INSERT INTO outbox_records (key, stream, type, body, recorded_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING`,
		parked: `SELECT ` + recordColumns + `, a.sink, a.attempts, a.last_error
FROM outbox_attempts a JOIN outbox_records r ON r.id = a.record
WHERE a.parked = 1 AND (? = '' OR a.sink = ?) ORDER BY r.tx, r.id, a.sink`,
		// records reads a page of the records after a position (tx, id)
		// that no stream checkpoint passed, with their refusals: sink,
		// sink, tx, id, the horizon's condition, limit.
		records: `SELECT ` + recordColumns + `, ` + retryColumns + `
FROM outbox_records r
LEFT JOIN outbox_checkpoints c ON c.sink = ? AND c.stream = r.stream
LEFT JOIN outbox_attempts a ON a.sink = ? AND a.record = r.id AND a.parked = 0
WHERE (r.tx, r.id) > (?, ?) AND %[1]s
	AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))
ORDER BY r.tx, r.id LIMIT ?`,
		// streamRecords is records for one stream: sink, sink, stream,
		// tx, id, the horizon's condition, limit.
		streamRecords: `SELECT ` + recordColumns + `, ` + retryColumns + `
FROM outbox_records r
LEFT JOIN outbox_checkpoints c ON c.sink = ? AND c.stream = r.stream
LEFT JOIN outbox_attempts a ON a.sink = ? AND a.record = r.id AND a.parked = 0
WHERE r.stream = ? AND (r.tx, r.id) > (?, ?) AND %[1]s
	AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))
ORDER BY r.tx, r.id LIMIT ?`,
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
WHERE (r.tx, r.id) > (?, ?) AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))`,
		waiting: `SELECT COUNT(*) FROM outbox_attempts WHERE sink = ? AND parked = 0`,
	}
	q.records = fmt.Sprintf(q.records, horizon)
	q.streamRecords = fmt.Sprintf(q.streamRecords, horizon)
	return q
}

// rebind turns the statements' ? placeholders into bindType's.
func (q statements) rebind(bindType int) statements {
	for _, s := range []*string{&q.write, &q.parked, &q.records, &q.streamRecords, &q.checkpoint, &q.advance, &q.refused, &q.delivered, &q.backlog, &q.waiting} {
		*s = sqlx.Rebind(bindType, *s)
	}
	return q
}

// recordRow is a record as read back.
type recordRow struct {
	Position   int64  `db:"id"`
	Tx         int64  `db:"tx"`
	Key        string `db:"key"`
	Stream     string `db:"stream"`
	Type       string `db:"type"`
	Body       []byte `db:"body"`
	RecordedAt int64  `db:"recorded_at"`
	// RetryAttempts counts the sink's refusals of the record so far
	// (records and streamRecords only), RetryNextAt when it may be offered
	// again (0 for none).
	RetryAttempts int   `db:"retry_attempts"`
	RetryNextAt   int64 `db:"retry_next_at"`
}

// at is the record's position.
func (r recordRow) at() position { return position{r.Tx, r.Position} }
