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
type sqliteDriver struct{ sqlDriver }

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
	rows, err := selectInChunks[string, state](ctx, q, names, sqliteChunk, inList(selectSchedulesIn, ""))
	return statesByName(rows), err
}

func (sqliteDriver) hashesOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]string, error) {
	rows, err := selectInChunks[string, nameHash](ctx, q, names, sqliteChunk, inList(selectHashesIn, ""))
	return hashesByName(rows), err
}

func (sqliteDriver) insertSchedules(ctx context.Context, q sqlx.ExtContext, rows []state) ([]string, error) {
	return selectInChunks[state, string](ctx, q, rows, sqliteChunk, func(part []state) (string, []any) {
		args := make([]any, 0, 11*len(part))
		for _, row := range part {
			args = append(append(args, row.Name), definitionArgs(row)...)
		}
		return insertSchedules + placeholders(len(part), "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") + ` ON CONFLICT (name) DO NOTHING RETURNING name`, args
	})
}

// recordFired updates from a list of rows; a row of VALUES is named
// column1, column2, … by SQLite.
func (sqliteDriver) recordFired(ctx context.Context, q sqlx.ExtContext, moves []move) error {
	return execInChunks(ctx, q, moves, sqliteChunk, func(part []move) (string, []any) {
		args := make([]any, 0, 4*len(part))
		for _, m := range part {
			args = append(args, m.name, m.runs, m.skipped, m.next)
		}
		return `UPDATE schedule_schedules
SET runs = runs + f.column2, skipped = skipped + f.column3, next_slot = f.column4
FROM (VALUES ` + placeholders(len(part), "(?, ?, ?, ?)") + `) AS f
WHERE schedule_schedules.name = f.column1`, args
	})
}

func (sqliteDriver) insertRuns(ctx context.Context, q sqlx.ExtContext, runs []Run) (map[string]bool, error) {
	ids, err := selectInChunks[Run, string](ctx, q, runs, sqliteChunk, func(part []Run) (string, []any) {
		args := make([]any, 0, 7*len(part))
		for _, r := range part {
			args = append(args, r.SlotID, r.RunID, r.Schedule, sqldb.EncodeTime(r.Slot), sqldb.EncodeTime(r.FiredAt), r.Attempt, manualFlag(r))
		}
		return insertRuns + placeholders(len(part), "(?, ?, ?, ?, ?, ?, ?)") + ` ON CONFLICT (slot_id) DO NOTHING RETURNING slot_id`, args
	})
	return setOf(ids), err
}

func (sqliteDriver) markRunning(ctx context.Context, q sqlx.ExtContext, runIDs []string) error {
	return execInChunks(ctx, q, runIDs, sqliteChunk, inList(markRunningIn, ""))
}

func (sqliteDriver) openRunsOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]int, error) {
	rows, err := selectInChunks[string, openCount](ctx, q, names, sqliteChunk, inList(unfinishedIn, " GROUP BY schedule"))
	return openByName(rows), err
}

// inList completes a statement with a list of a chunk's keys, prefix (…) suffix.
func inList(prefix, suffix string) func(part []string) (string, []any) {
	return func(part []string) (string, []any) {
		return prefix + "(" + placeholders(len(part), "?") + ")" + suffix, anys(part)
	}
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
