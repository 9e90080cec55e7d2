package schedule

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// postgresDriver is the driver of PostgreSQL. Transactions run side by
// side, so a writer of a schedule locks its row (lockSchedule); a
// set-wise statement takes its rows as arrays, in chunks as large as a
// to-do batch, so that a batch is one statement whatever its size.
//
// The set-wise reads join their names, unnested from an array, to the
// table instead of testing "name = ANY($1)": over a table the planner
// has no statistics for yet (one Sync has just filled it), ANY was
// planned as if each row were tested against the whole array, and read
// back a large Sync's hashes orders of magnitude slower than the join.
type postgresDriver struct{ sqlDriver }

// postgresChunk is how many rows one set-wise statement takes on
// PostgreSQL; postgresInsertChunk how many new schedules: pgx keeps a
// connection's buffer as large as the largest message it sent, and eleven
// arrays of a whole batch of definitions raised the peak heap of a large
// Sync for no gain in speed.
const (
	postgresChunk       = todolist.MaxBatchSize
	postgresInsertChunk = 1000
)

const (
	selectScheduleForUpdate = selectSchedule + ` FOR UPDATE`
	selectSchedulesOf       = `SELECT ` + scheduleColumns + `
FROM unnest($1::text[]) AS w(wanted) JOIN schedule_schedules ON name = wanted`
	selectHashesOf = `SELECT name, hash FROM unnest($1::text[]) AS w(wanted) JOIN schedule_schedules ON name = wanted`
	unfinishedOf   = `SELECT schedule, COUNT(*) AS n
FROM unnest($1::text[]) AS w(wanted) JOIN schedule_runs ON schedule = wanted WHERE finished = 0 GROUP BY schedule`
	markRunningAny        = `UPDATE schedule_runs SET finished = 0 WHERE run_id = ANY($1)`
	insertSchedulesUnnest = `INSERT INTO schedule_schedules (name, spec, hash, command, payload, catch_up, max_runs, until, next_slot, jitter, overlap)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[])
ON CONFLICT (name) DO NOTHING RETURNING name`
	insertRunsUnnest = `INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt, manual)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::int[], $7::int[])
ON CONFLICT (slot_id) DO NOTHING RETURNING slot_id`
	recordFiredUnnest = `UPDATE schedule_schedules AS s
SET runs = s.runs + f.runs, skipped = s.skipped + f.skipped, next_slot = f.next_slot
FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) AS f(name, runs, skipped, next_slot)
WHERE s.name = f.name`
)

// lockSchedule locks the row FOR UPDATE.
func (d postgresDriver) lockSchedule(ctx context.Context, tx *sqlx.Tx, name string) (state, bool, error) {
	return d.getSchedule(ctx, tx, selectScheduleForUpdate, name)
}

func (postgresDriver) schedulesOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]state, error) {
	rows, err := selectInChunks[string, state](ctx, q, names, postgresChunk, array(selectSchedulesOf))
	return statesByName(rows), err
}

func (postgresDriver) hashesOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]string, error) {
	rows, err := selectInChunks[string, nameHash](ctx, q, names, postgresChunk, array(selectHashesOf))
	return hashesByName(rows), err
}

func (postgresDriver) insertSchedules(ctx context.Context, q sqlx.ExtContext, rows []state) ([]string, error) {
	return selectInChunks[state, string](ctx, q, rows, postgresInsertChunk, func(part []state) (string, []any) {
		var cols struct {
			names, specs, hashes, commands, catchUps, overlaps []string
			payloads                                           [][]byte
			maxRuns, until, next, jitter                       []int64
		}
		for _, row := range part {
			cols.names = append(cols.names, row.Name)
			cols.specs = append(cols.specs, row.Spec)
			cols.hashes = append(cols.hashes, row.Hash)
			cols.commands = append(cols.commands, row.Command)
			cols.payloads = append(cols.payloads, row.Payload)
			cols.catchUps = append(cols.catchUps, row.CatchUp)
			cols.maxRuns = append(cols.maxRuns, int64(row.MaxRuns))
			cols.until = append(cols.until, row.Until)
			cols.next = append(cols.next, row.NextSlot)
			cols.jitter = append(cols.jitter, row.Jitter)
			cols.overlaps = append(cols.overlaps, row.Overlap)
		}
		return insertSchedulesUnnest, []any{cols.names, cols.specs, cols.hashes, cols.commands, cols.payloads, cols.catchUps, cols.maxRuns, cols.until, cols.next, cols.jitter, cols.overlaps}
	})
}

func (postgresDriver) recordFired(ctx context.Context, q sqlx.ExtContext, moves []move) error {
	return execInChunks(ctx, q, moves, postgresChunk, func(part []move) (string, []any) {
		names := make([]string, len(part))
		runs, skipped, next := make([]int64, len(part)), make([]int64, len(part)), make([]int64, len(part))
		for i, m := range part {
			names[i], runs[i], skipped[i], next[i] = m.name, m.runs, m.skipped, m.next
		}
		return recordFiredUnnest, []any{names, runs, skipped, next}
	})
}

func (postgresDriver) insertRuns(ctx context.Context, q sqlx.ExtContext, runs []Run) (map[string]bool, error) {
	ids, err := selectInChunks[Run, string](ctx, q, runs, postgresChunk, func(part []Run) (string, []any) {
		var cols struct {
			slotIDs, runIDs, names []string
			slots, firedAt         []int64
			attempts, manual       []int32
		}
		for _, r := range part {
			cols.slotIDs = append(cols.slotIDs, r.SlotID)
			cols.runIDs = append(cols.runIDs, r.RunID)
			cols.names = append(cols.names, r.Schedule)
			cols.slots = append(cols.slots, sqldb.EncodeTime(r.Slot))
			cols.firedAt = append(cols.firedAt, sqldb.EncodeTime(r.FiredAt))
			cols.attempts = append(cols.attempts, int32(r.Attempt))
			cols.manual = append(cols.manual, int32(manualFlag(r)))
		}
		return insertRunsUnnest, []any{cols.slotIDs, cols.runIDs, cols.names, cols.slots, cols.firedAt, cols.attempts, cols.manual}
	})
	return setOf(ids), err
}

func (postgresDriver) markRunning(ctx context.Context, q sqlx.ExtContext, runIDs []string) error {
	return execInChunks(ctx, q, runIDs, postgresChunk, array(markRunningAny))
}

func (postgresDriver) openRunsOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]int, error) {
	rows, err := selectInChunks[string, openCount](ctx, q, names, postgresChunk, array(unfinishedOf))
	return openByName(rows), err
}

// array gives a statement that takes a chunk's keys as one array, $1.
func array(query string) func(part []string) (string, []any) {
	return func(part []string) (string, []any) { return query, []any{part} }
}
