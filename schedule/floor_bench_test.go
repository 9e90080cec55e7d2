package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// fireFloor fires every schedule due at now with the fewest statements the
// design allows, in raw SQL on the scheduler's own tables: per batch of
// size, one transaction that picks the due items, reads their schedules,
// records the runs (the slot id the guard), moves the schedules' counts
// and next slots, and moves the items a minute on; workers connections
// take batches side by side. It knows the spec is "every minute" and so
// computes no plan: it is the floor BenchmarkEveryMinute holds the
// scheduler against, its late.record call where the scheduler calls its
// handler.
func fireFloor(ctx context.Context, db *sqlx.DB, now time.Time, size, workers int, late *lateness) error {
	pg := sqldb.DialectOf(db) == sqldb.Postgres
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				n, err := fireFloorBatch(ctx, db, pg, now, size, late)
				if err != nil || n == 0 {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
	for range workers {
		err = errors.Join(err, <-errs)
	}
	return err
}

func fireFloorBatch(ctx context.Context, db *sqlx.DB, pg bool, now time.Time, size int, late *lateness) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	pick := `SELECT id, due FROM todolist_items WHERE list = ? AND parked = 0 AND run_at <= ? ORDER BY run_at LIMIT ?`
	if pg {
		pick = `SELECT id, due FROM todolist_items WHERE list = $1 AND parked = 0 AND run_at <= $2 ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED`
	}
	var names []string
	var dues []int64
	if err := scanRows(tx.QueryContext(ctx, pick, "passage-schedules", sqldb.EncodeTime(now), size))(func(scan func(...any) error) error {
		var name string
		var due int64
		err := scan(&name, &due)
		names, dues = append(names, name), append(dues, due)
		return err
	}); err != nil || len(names) == 0 {
		return 0, err
	}
	load := `SELECT name, spec, hash, command, payload, catch_up, max_runs, until, paused, runs, skipped, next_slot, jitter, overlap
FROM schedule_schedules WHERE name `
	var loadArgs []any
	if pg {
		load, loadArgs = load+`= ANY($1)`, []any{names}
	} else {
		load, loadArgs = load+`IN (`+repeat(len(names), "?")+`)`, anys(names)
	}
	loaded := 0
	if err := scanRows(tx.QueryContext(ctx, load, loadArgs...))(func(scan func(...any) error) error {
		var name, spec, hash, command, catchUp, overlap string
		var payload []byte
		var maxRuns, until, paused, runs, skipped, next, jitter int64
		loaded++
		return scan(&name, &spec, &hash, &command, &payload, &catchUp, &maxRuns, &until, &paused, &runs, &skipped, &next, &jitter, &overlap)
	}); err != nil {
		return 0, err
	}
	if loaded != len(names) {
		return 0, fmt.Errorf("floor: %d schedules of %d", loaded, len(names))
	}
	slotIDs, runIDs := make([]string, len(names)), make([]string, len(names))
	nexts := make([]int64, len(names))
	firedAt := sqldb.EncodeTime(now)
	for i, name := range names {
		slot := sqldb.DecodeTime(dues[i])
		slotIDs[i] = name + "@" + slot.Format(time.RFC3339Nano)
		runIDs[i] = uuid.Must(uuid.NewV7()).String()
		nexts[i] = sqldb.EncodeTime(slot.Add(time.Minute))
	}
	var insert string
	var insertArgs []any
	if pg {
		insert = `INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt, manual)
SELECT r.slot_id, r.run_id, r.schedule, r.slot, $5, 1, 0 FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS r(slot_id, run_id, schedule, slot)
ON CONFLICT (slot_id) DO NOTHING RETURNING slot_id`
		insertArgs = []any{slotIDs, runIDs, names, dues, firedAt}
	} else {
		insert = `INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt, manual) VALUES ` +
			repeat(len(names), "(?, ?, ?, ?, ?, 1, 0)") + ` ON CONFLICT (slot_id) DO NOTHING RETURNING slot_id`
		for i := range names {
			insertArgs = append(insertArgs, slotIDs[i], runIDs[i], names[i], dues[i], firedAt)
		}
	}
	recorded := 0
	if err := scanRows(tx.QueryContext(ctx, insert, insertArgs...))(func(scan func(...any) error) error {
		var slotID string
		late.record() // the scheduler calls the handler of each run it recorded
		recorded++
		return scan(&slotID)
	}); err != nil {
		return 0, err
	}
	if recorded != len(names) {
		return 0, fmt.Errorf("floor: %d runs of %d recorded", recorded, len(names))
	}
	var moveSchedules, moveItems string
	var scheduleArgs, itemArgs []any
	if pg {
		moveSchedules = `UPDATE schedule_schedules AS s SET runs = s.runs + 1, next_slot = f.next
FROM unnest($1::text[], $2::bigint[]) AS f(name, next) WHERE s.name = f.name`
		moveItems = `UPDATE todolist_items AS t SET due = f.next, run_at = f.next
FROM unnest($2::text[], $3::bigint[]) AS f(id, next) WHERE t.list = $1 AND t.id = f.id`
		scheduleArgs = []any{names, nexts}
		itemArgs = []any{"passage-schedules", names, nexts}
	} else {
		moveSchedules = `UPDATE schedule_schedules SET runs = runs + 1, next_slot = f.column2
FROM (VALUES ` + repeat(len(names), "(?, ?)") + `) AS f WHERE schedule_schedules.name = f.column1`
		moveItems = `UPDATE todolist_items SET due = f.column2, run_at = f.column2
FROM (VALUES ` + repeat(len(names), "(?, ?)") + `) AS f WHERE list = ? AND id = f.column1`
		for i := range names {
			scheduleArgs = append(scheduleArgs, names[i], nexts[i])
		}
		itemArgs = append(scheduleArgs[:len(scheduleArgs):len(scheduleArgs)], "passage-schedules")
	}
	if _, err := tx.ExecContext(ctx, moveSchedules, scheduleArgs...); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, moveItems, itemArgs...); err != nil {
		return 0, err
	}
	return len(names), tx.Commit()
}

// scanRows calls each with a scan function per row of a query's result.
func scanRows(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close() error
}, err error) func(each func(scan func(...any) error) error) error {
	return func(each func(scan func(...any) error) error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows.Scan); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

func repeat(n int, row string) string { return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") }

func anys(names []string) []any {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return args
}
