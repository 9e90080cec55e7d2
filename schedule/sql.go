package schedule

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
)

// The statements every driver shares, written with ? and rebound to the
// database's placeholders; a driver's own statements (the set-wise ones,
// the locking read) are in its file, the tables in schema.go.
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

// sqlDriver is the part of a driver whose SQL every database takes as it
// is; each database's driver embeds it and adds its own set-wise
// statements and locking read.
type sqlDriver struct{}

// getSchedule reads the row query selects for name.
func (sqlDriver) getSchedule(ctx context.Context, q sqlx.ExtContext, query, name string) (state, bool, error) {
	var st state
	err := sqlx.GetContext(ctx, q, &st, q.Rebind(query), name)
	if errors.Is(err, sql.ErrNoRows) {
		return st, false, nil
	}
	return st, err == nil, err
}

func (sqlDriver) schedules(ctx context.Context, q sqlx.ExtContext) ([]state, error) {
	var rows []state
	err := sqlx.SelectContext(ctx, q, &rows, selectSchedules)
	return rows, err
}

func (sqlDriver) countSchedules(ctx context.Context, q sqlx.ExtContext) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, countSchedules)
	return n, err
}

// definitionArgs are a row's definition and next slot, in the order of
// insertSchedule's and updateDefinition's columns after the name.
func definitionArgs(row state) []any {
	return []any{row.Spec, row.Hash, row.Command, row.Payload, row.CatchUp, row.MaxRuns, row.Until, row.NextSlot, row.Jitter, row.Overlap}
}

// manualFlag is a run's manual column: 1 for a run started by Trigger.
func manualFlag(r Run) int {
	if r.Manual {
		return 1
	}
	return 0
}

func (sqlDriver) insertSchedule(ctx context.Context, q sqlx.ExtContext, row state) error {
	_, err := q.ExecContext(ctx, q.Rebind(insertSchedule), append([]any{row.Name}, definitionArgs(row)...)...)
	return err
}

func (sqlDriver) updateDefinition(ctx context.Context, q sqlx.ExtContext, row state) error {
	_, err := q.ExecContext(ctx, q.Rebind(updateDefinition), append(definitionArgs(row), row.Name)...)
	return err
}

func (sqlDriver) setPaused(ctx context.Context, q sqlx.ExtContext, name string, paused bool, next int64) error {
	flag := 0
	if paused {
		flag = 1
	}
	_, err := q.ExecContext(ctx, q.Rebind(setPaused), flag, next, name)
	return err
}

func (sqlDriver) deleteSchedule(ctx context.Context, q sqlx.ExtContext, name string) error {
	_, err := q.ExecContext(ctx, q.Rebind(deleteSched), name)
	return err
}

func (sqlDriver) finishRun(ctx context.Context, q sqlx.ExtContext, runID string) error {
	_, err := q.ExecContext(ctx, q.Rebind(finishRun), runID)
	return err
}

func (sqlDriver) runOf(ctx context.Context, q sqlx.ExtContext, runID string) (string, bool, bool, error) {
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

func (sqlDriver) openRuns(ctx context.Context, q sqlx.ExtContext) (map[string]int, error) {
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

func (sqlDriver) runsOf(ctx context.Context, q sqlx.ExtContext, name string, limit int) ([]RunRecord, error) {
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

func (sqlDriver) pruneRuns(ctx context.Context, q sqlx.ExtContext, before int64, limit int) (int64, error) {
	res, err := q.ExecContext(ctx, q.Rebind(pruneRuns), before, limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (sqlDriver) savepoint(ctx context.Context, tx *sqlx.Tx, name string) error {
	_, err := tx.ExecContext(ctx, "SAVEPOINT "+name)
	return err
}

func (sqlDriver) rollbackTo(ctx context.Context, tx *sqlx.Tx, name string) error {
	_, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+name)
	return err
}

func (sqlDriver) release(ctx context.Context, tx *sqlx.Tx, name string) error {
	_, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+name)
	return err
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
