package schedule

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// The schema: one row per schedule (its spec's text and hash, the command
// it sends, its policies and its state), and one row per run. A run's slot
// id — the schedule's name and the slot's instant — is its primary key:
// the guard that fires each slot once among replicas and across crashes.
// The next slot itself is an item of the to-do list named listName, keyed
// by the schedule's name, so no timer is kept anywhere.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE schedule_schedules (
	name      TEXT    NOT NULL PRIMARY KEY,
	spec      TEXT    NOT NULL,
	hash      TEXT    NOT NULL,
	command   TEXT    NOT NULL,
	payload   BLOB,
	catch_up  TEXT    NOT NULL,
	max_runs  INTEGER NOT NULL DEFAULT 0,
	until     INTEGER NOT NULL DEFAULT 0,
	paused    INTEGER NOT NULL DEFAULT 0,
	runs      INTEGER NOT NULL DEFAULT 0,
	skipped   INTEGER NOT NULL DEFAULT 0,
	next_slot INTEGER NOT NULL DEFAULT 0,
	jitter    INTEGER NOT NULL DEFAULT 0,
	overlap   TEXT    NOT NULL DEFAULT 'allow'
) WITHOUT ROWID;
CREATE TABLE schedule_runs (
	slot_id  TEXT    NOT NULL PRIMARY KEY,
	run_id   TEXT    NOT NULL UNIQUE,
	schedule TEXT    NOT NULL,
	slot     INTEGER NOT NULL,
	fired_at INTEGER NOT NULL,
	attempt  INTEGER NOT NULL,
	manual   INTEGER NOT NULL DEFAULT 0,
	finished INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule, slot);
CREATE INDEX schedule_runs_unfinished ON schedule_runs (schedule) WHERE finished = 0;`,
	Postgres: `CREATE TABLE schedule_schedules (
	name      TEXT    NOT NULL PRIMARY KEY,
	spec      TEXT    NOT NULL,
	hash      TEXT    NOT NULL,
	command   TEXT    NOT NULL,
	payload   BYTEA,
	catch_up  TEXT    NOT NULL,
	max_runs  BIGINT  NOT NULL DEFAULT 0,
	until     BIGINT  NOT NULL DEFAULT 0,
	paused    INTEGER NOT NULL DEFAULT 0,
	runs      BIGINT  NOT NULL DEFAULT 0,
	skipped   BIGINT  NOT NULL DEFAULT 0,
	next_slot BIGINT  NOT NULL DEFAULT 0,
	jitter    BIGINT  NOT NULL DEFAULT 0,
	overlap   TEXT    NOT NULL DEFAULT 'allow'
);
CREATE TABLE schedule_runs (
	slot_id  TEXT    NOT NULL PRIMARY KEY,
	run_id   TEXT    NOT NULL UNIQUE,
	schedule TEXT    NOT NULL,
	slot     BIGINT  NOT NULL,
	fired_at BIGINT  NOT NULL,
	attempt  INTEGER NOT NULL,
	manual   INTEGER NOT NULL DEFAULT 0,
	finished INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule, slot);
CREATE INDEX schedule_runs_unfinished ON schedule_runs (schedule) WHERE finished = 0;`,
}, {
	Version:  2,
	Postgres: `ALTER TABLE schedule_schedules SET (fillfactor = 50);`,
}}

// listName is the to-do list holding every schedule's next slot.
const listName = "passage-schedules"

// The statements every driver shares, written with ? and rebound to the
// database's placeholders; a driver's own statements (the set-wise ones,
// the locking read) are in its file.
const (
	scheduleColumns = `name, spec, hash, command, payload, catch_up, max_runs, until, paused, runs, skipped, next_slot, jitter, overlap`
	selectSchedule  = `SELECT ` + scheduleColumns + ` FROM schedule_schedules WHERE name = ?`
	selectSchedules = `SELECT ` + scheduleColumns + ` FROM schedule_schedules ORDER BY name`
	countSchedules  = `SELECT COUNT(*) FROM schedule_schedules`
	insertSchedule  = `INSERT INTO schedule_schedules (name, spec, hash, command, payload, catch_up, max_runs, until, next_slot, jitter, overlap)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	updateDefinition = `UPDATE schedule_schedules
SET spec = ?, hash = ?, command = ?, payload = ?, catch_up = ?, max_runs = ?, until = ?, next_slot = ?, jitter = ?, overlap = ?
WHERE name = ?`
	setPaused   = `UPDATE schedule_schedules SET paused = ?, next_slot = ? WHERE name = ?`
	deleteSched = `DELETE FROM schedule_schedules WHERE name = ?`
	finishRun   = `UPDATE schedule_runs SET finished = 1 WHERE run_id = ? AND finished = 0`
	runByID     = `SELECT schedule, finished FROM schedule_runs WHERE run_id = ?`
	openRuns    = `SELECT schedule, COUNT(*) AS n FROM schedule_runs WHERE finished = 0 GROUP BY schedule`
	// The index (schedule, slot) serves the order; fired_at breaks the
	// ties of manual runs, whose slot is their firing instant, and the run
	// id those of two runs at one instant (a UUIDv7: the later one
	// created sorts after), so the order is the same at every read.
	selectRuns = `SELECT slot_id, run_id, schedule, slot, fired_at, attempt, manual, finished
FROM schedule_runs WHERE schedule = ? ORDER BY slot DESC, fired_at DESC, run_id DESC LIMIT ?`
	// The subquery, not DELETE … LIMIT, which SQLite builds leave out by
	// default and PostgreSQL does not have.
	pruneRuns = `DELETE FROM schedule_runs WHERE slot_id IN (
	SELECT slot_id FROM schedule_runs WHERE finished = 1 AND slot < ? LIMIT ?)`
)

// portable is the part of a driver whose SQL every database takes as it
// is; each driver embeds it.
type portable struct{}

// getSchedule reads the row query selects for name.
func (portable) getSchedule(ctx context.Context, q sqlx.ExtContext, query, name string) (state, bool, error) {
	var st state
	err := sqlx.GetContext(ctx, q, &st, q.Rebind(query), name)
	if errors.Is(err, sql.ErrNoRows) {
		return st, false, nil
	}
	return st, err == nil, err
}

func (portable) schedules(ctx context.Context, q sqlx.ExtContext) ([]state, error) {
	var rows []state
	err := sqlx.SelectContext(ctx, q, &rows, selectSchedules)
	return rows, err
}

func (portable) countSchedules(ctx context.Context, q sqlx.ExtContext) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, countSchedules)
	return n, err
}

// definitionArgs are a row's definition and next slot, in the order of
// insertSchedule's and updateDefinition's columns after the name.
func definitionArgs(row state) []any {
	return []any{row.Spec, row.Hash, row.Command, row.Payload, row.CatchUp, row.MaxRuns, row.Until, row.NextSlot, row.Jitter, row.Overlap}
}

func (portable) insertSchedule(ctx context.Context, q sqlx.ExtContext, row state) error {
	_, err := q.ExecContext(ctx, q.Rebind(insertSchedule), append([]any{row.Name}, definitionArgs(row)...)...)
	return err
}

func (portable) updateDefinition(ctx context.Context, q sqlx.ExtContext, row state) error {
	_, err := q.ExecContext(ctx, q.Rebind(updateDefinition), append(definitionArgs(row), row.Name)...)
	return err
}

func (portable) setPaused(ctx context.Context, q sqlx.ExtContext, name string, paused bool, next int64) error {
	flag := 0
	if paused {
		flag = 1
	}
	_, err := q.ExecContext(ctx, q.Rebind(setPaused), flag, next, name)
	return err
}

func (portable) deleteSchedule(ctx context.Context, q sqlx.ExtContext, name string) error {
	_, err := q.ExecContext(ctx, q.Rebind(deleteSched), name)
	return err
}

func (portable) finishRun(ctx context.Context, q sqlx.ExtContext, runID string) error {
	_, err := q.ExecContext(ctx, q.Rebind(finishRun), runID)
	return err
}

func (portable) runOf(ctx context.Context, q sqlx.ExtContext, runID string) (string, bool, bool, error) {
	var run struct {
		Schedule string `db:"schedule"`
		Finished int    `db:"finished"`
	}
	err := sqlx.GetContext(ctx, q, &run, q.Rebind(runByID), runID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, false, nil
	}
	return run.Schedule, run.Finished != 0, err == nil, err
}

func (portable) openRuns(ctx context.Context, q sqlx.ExtContext) (map[string]int, error) {
	var rows []openCount
	if err := sqlx.SelectContext(ctx, q, &rows, openRuns); err != nil {
		return nil, err
	}
	return openByName(rows), nil
}

// nameHash is a row of a read of definition hashes.
type nameHash struct {
	Name string `db:"name"`
	Hash string `db:"hash"`
}

func (portable) runsOf(ctx context.Context, q sqlx.ExtContext, name string, limit int) ([]RunRecord, error) {
	var rows []runRow
	if err := sqlx.SelectContext(ctx, q, &rows, q.Rebind(selectRuns), name, limit); err != nil {
		return nil, err
	}
	out := make([]RunRecord, len(rows))
	for i, r := range rows {
		out[i] = r.runRecord()
	}
	return out, nil
}

func (portable) pruneRuns(ctx context.Context, q sqlx.ExtContext, before int64, limit int) (int64, error) {
	res, err := q.ExecContext(ctx, q.Rebind(pruneRuns), before, limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (portable) savepoint(ctx context.Context, tx *sqlx.Tx, name string) error {
	_, err := tx.ExecContext(ctx, "SAVEPOINT "+name)
	return err
}

func (portable) rollbackTo(ctx context.Context, tx *sqlx.Tx, name string) error {
	_, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+name)
	return err
}

func (portable) release(ctx context.Context, tx *sqlx.Tx, name string) error {
	_, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+name)
	return err
}

// move is what a firing adds to a schedule's counts, and its next slot.
type move struct {
	name          string
	runs, skipped int64
	next          int64
}

// inChunks calls f with consecutive parts of n rows, [from, to), of at
// most size rows each.
func inChunks(n, size int, f func(from, to int) error) error {
	for from := 0; from < n; from += size {
		if err := f(from, min(from+size, n)); err != nil {
			return err
		}
	}
	return nil
}

// selectInChunks reads the rows of type T that a statement selects for
// rows, one statement a chunk of at most size rows; stmt gives a chunk's
// statement and its arguments.
func selectInChunks[R, T any](ctx context.Context, q sqlx.ExtContext, rows []R, size int, stmt func(part []R) (string, []any)) ([]T, error) {
	var out []T
	err := inChunks(len(rows), size, func(from, to int) error {
		query, args := stmt(rows[from:to])
		var got []T
		err := sqlx.SelectContext(ctx, q, &got, query, args...)
		out = append(out, got...)
		return err
	})
	return out, err
}

// execInChunks runs a statement for rows, one a chunk of at most size
// rows; stmt gives a chunk's statement and its arguments.
func execInChunks[R any](ctx context.Context, q sqlx.ExtContext, rows []R, size int, stmt func(part []R) (string, []any)) error {
	return inChunks(len(rows), size, func(from, to int) error {
		query, args := stmt(rows[from:to])
		_, err := q.ExecContext(ctx, query, args...)
		return err
	})
}

// statesByName, hashesByName and setOf key what the set-wise reads
// return.
func statesByName(rows []state) map[string]state {
	out := make(map[string]state, len(rows))
	for _, st := range rows {
		out[st.Name] = st
	}
	return out
}

func hashesByName(rows []nameHash) map[string]string {
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Hash
	}
	return out
}

func setOf(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}
