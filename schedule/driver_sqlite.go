package schedule

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// sqliteDriver is the driver of SQLite. Its write transactions exclude
// each other, so a read in one needs no lock; its statements bind at most
// 32,766 parameters, so a set-wise statement takes a list of rows in
// chunks of sqliteChunk.
type sqliteDriver struct{ portable }

// sqliteChunk is how many rows one set-wise statement takes on SQLite.
const sqliteChunk = 1000

// The set-wise statements, completed with a list of names or rows.
const (
	selectSchedulesIn = `SELECT ` + scheduleColumns + ` FROM schedule_schedules WHERE name IN `
	selectHashesIn    = `SELECT name, hash FROM schedule_schedules WHERE name IN `
	unfinishedIn      = `SELECT schedule, COUNT(*) AS n FROM schedule_runs WHERE finished = 0 AND schedule IN `
	markRunningIn     = `UPDATE schedule_runs SET finished = 0 WHERE run_id IN `
	insertSchedules   = `INSERT INTO schedule_schedules (name, spec, hash, command, payload, catch_up, max_runs, until, next_slot, jitter, overlap) VALUES `
	insertRuns        = `INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt, manual) VALUES `
)

// lockSchedule needs no lock: the write transaction tx already keeps
// every other writer out.
func (d sqliteDriver) lockSchedule(ctx context.Context, tx *sqlx.Tx, name string) (state, bool, error) {
	return d.getSchedule(ctx, tx, selectSchedule, name)
}

func (sqliteDriver) schedulesOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]state, error) {
	states := make(map[string]state, len(names))
	err := inChunks(len(names), sqliteChunk, func(from, to int) error {
		var rows []state
		err := sqlx.SelectContext(ctx, q, &rows, selectSchedulesIn+`(`+placeholders(to-from, "?")+`)`, anys(names[from:to])...)
		for _, st := range rows {
			states[st.Name] = st
		}
		return err
	})
	return states, err
}

func (sqliteDriver) hashesOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]string, error) {
	hashes := make(map[string]string, len(names))
	err := inChunks(len(names), sqliteChunk, func(from, to int) error {
		var rows []nameHash
		err := sqlx.SelectContext(ctx, q, &rows, selectHashesIn+`(`+placeholders(to-from, "?")+`)`, anys(names[from:to])...)
		for _, r := range rows {
			hashes[r.Name] = r.Hash
		}
		return err
	})
	return hashes, err
}

func (sqliteDriver) insertSchedules(ctx context.Context, q sqlx.ExtContext, rows []state) ([]string, error) {
	var inserted []string
	err := inChunks(len(rows), sqliteChunk, func(from, to int) error {
		args := make([]any, 0, 11*(to-from))
		for _, row := range rows[from:to] {
			args = append(append(args, row.Name), definitionArgs(row)...)
		}
		var names []string
		err := sqlx.SelectContext(ctx, q, &names, insertSchedules+placeholders(to-from, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")+` ON CONFLICT (name) DO NOTHING RETURNING name`, args...)
		inserted = append(inserted, names...)
		return err
	})
	return inserted, err
}

// recordFired updates from a list of rows; a row of VALUES is named
// column1, column2, … by SQLite.
func (sqliteDriver) recordFired(ctx context.Context, q sqlx.ExtContext, moves []move) error {
	return inChunks(len(moves), sqliteChunk, func(from, to int) error {
		args := make([]any, 0, 4*(to-from))
		for _, m := range moves[from:to] {
			args = append(args, m.name, m.runs, m.skipped, m.next)
		}
		_, err := q.ExecContext(ctx, `UPDATE schedule_schedules
SET runs = runs + f.column2, skipped = skipped + f.column3, next_slot = f.column4
FROM (VALUES `+placeholders(to-from, "(?, ?, ?, ?)")+`) AS f
WHERE schedule_schedules.name = f.column1`, args...)
		return err
	})
}

func (sqliteDriver) insertRuns(ctx context.Context, q sqlx.ExtContext, runs []Run) (map[string]bool, error) {
	recorded := make(map[string]bool, len(runs))
	err := inChunks(len(runs), sqliteChunk, func(from, to int) error {
		args := make([]any, 0, 7*(to-from))
		for _, r := range runs[from:to] {
			args = append(args, r.SlotID, r.RunID, r.Schedule, sqldb.EncodeTime(r.Slot), sqldb.EncodeTime(r.FiredAt), r.Attempt, manualFlag(r))
		}
		var ids []string
		err := sqlx.SelectContext(ctx, q, &ids, insertRuns+placeholders(to-from, "(?, ?, ?, ?, ?, ?, ?)")+` ON CONFLICT (slot_id) DO NOTHING RETURNING slot_id`, args...)
		for _, id := range ids {
			recorded[id] = true
		}
		return err
	})
	return recorded, err
}

func (sqliteDriver) markRunning(ctx context.Context, q sqlx.ExtContext, runIDs []string) error {
	return inChunks(len(runIDs), sqliteChunk, func(from, to int) error {
		_, err := q.ExecContext(ctx, markRunningIn+`(`+placeholders(to-from, "?")+`)`, anys(runIDs[from:to])...)
		return err
	})
}

func (sqliteDriver) openRunsOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]int, error) {
	open := map[string]int{}
	err := inChunks(len(names), sqliteChunk, func(from, to int) error {
		var rows []openCount
		err := sqlx.SelectContext(ctx, q, &rows, unfinishedIn+`(`+placeholders(to-from, "?")+`) GROUP BY schedule`, anys(names[from:to])...)
		addOpen(open, rows)
		return err
	})
	return open, err
}

// manualFlag is a run's manual column: 1 for a run started by Trigger.
func manualFlag(r Run) int {
	if r.Manual {
		return 1
	}
	return 0
}

// placeholders returns n copies of row separated by commas.
func placeholders(n int, row string) string {
	var b strings.Builder
	b.Grow(n * (len(row) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

func anys(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
