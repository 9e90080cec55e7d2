package schedule

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// driver is everything the scheduler asks of its database: the logic
// (Sync, firing, the admin verbs, inspection) calls it and holds no SQL,
// and each database's statements and tuning live in its own driver
// (driver_sqlite.go, driver_postgres.go), the statements both share in
// sql.go, the tables in schema.go. newDriver picks one from the
// database's dialect; driver_test.go runs the same contract against each.
//
// Every method runs its statements through q — a *sqlx.Tx, or a *sqlx.DB
// for the reads of inspection — and leaves the transaction to its caller.
// The set-wise methods take any number of rows and split them into
// statements of the size their database takes. Times are stored encoded
// (sqldb.EncodeTime); a slot or an end of 0 means none.
type driver interface {
	// lockSchedule reads the row of the named schedule in tx and keeps
	// other writers of it waiting until tx ends, so that a firing, a Sync
	// and a Pause of one schedule take turns. Its caller holds the
	// schedule's to-do item first (todolist.List.HoldTx), so that every
	// writer locks the item, then the row. found is false for a name no
	// schedule has.
	lockSchedule(ctx context.Context, tx *sqlx.Tx, name string) (st state, found bool, err error)
	// schedules reads every schedule's row, by name.
	schedules(ctx context.Context, q sqlx.ExtContext) ([]state, error)
	// countSchedules counts the schedules' rows.
	countSchedules(ctx context.Context, q sqlx.ExtContext) (int, error)
	// schedulesOf reads the rows of the named schedules, not locked; a
	// name not stored is not in the map.
	schedulesOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]state, error)
	// hashesOf reads the definition hashes of the named schedules; a name
	// not stored is not in the map.
	hashesOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]string, error)
	// insertSchedule stores a new schedule's row (its definition and
	// NextSlot); a name already stored is an error.
	insertSchedule(ctx context.Context, q sqlx.ExtContext, row state) error
	// insertSchedules stores new schedules' rows and returns the names it
	// stored: a name already stored is left as it was and not returned.
	insertSchedules(ctx context.Context, q sqlx.ExtContext, rows []state) ([]string, error)
	// updateDefinition replaces a stored schedule's definition and next
	// slot; its counts and pause stay.
	updateDefinition(ctx context.Context, q sqlx.ExtContext, row state) error
	// recordFired adds each move's runs and skipped slots to its
	// schedule's counts and sets its next slot.
	recordFired(ctx context.Context, q sqlx.ExtContext, moves []move) error
	// setPaused pauses or resumes a schedule and sets its next slot.
	setPaused(ctx context.Context, q sqlx.ExtContext, name string, paused bool, next int64) error
	// deleteSchedule removes a schedule's row; its runs stay.
	deleteSchedule(ctx context.Context, q sqlx.ExtContext, name string) error

	// insertRuns records runs, finished, and returns the slot ids it
	// recorded: a slot id already recorded (another replica's run, an
	// earlier attempt that committed) is the guard that fires each slot
	// once — that run is left as it was and its slot id not returned.
	insertRuns(ctx context.Context, q sqlx.ExtContext, runs []Run) (map[string]bool, error)
	// markRunning leaves the runs of the ids open (ErrStillRunning).
	markRunning(ctx context.Context, q sqlx.ExtContext, runIDs []string) error
	// finishRun closes an open run; a finished one stays as it is.
	finishRun(ctx context.Context, q sqlx.ExtContext, runID string) error
	// runOf reads a run's schedule and whether it is finished; found is
	// false for a run id no run has.
	runOf(ctx context.Context, q sqlx.ExtContext, runID string) (schedule string, finished, found bool, err error)
	// openRuns counts every schedule's open runs; a schedule without one
	// is not in the map.
	openRuns(ctx context.Context, q sqlx.ExtContext) (map[string]int, error)
	// openRunsOf is openRuns for the named schedules only.
	openRunsOf(ctx context.Context, q sqlx.ExtContext, names []string) (map[string]int, error)
	// runsOf reads a schedule's latest runs, newest slot first (ties: the
	// later fired, then the later run id), at most limit.
	runsOf(ctx context.Context, q sqlx.ExtContext, name string, limit int) ([]RunRecord, error)
	// pruneRuns deletes at most limit finished runs whose slot is before
	// before, and returns how many it deleted.
	pruneRuns(ctx context.Context, q sqlx.ExtContext, before int64, limit int) (int64, error)

	// savepoint, rollbackTo and release mark a point of tx, undo what
	// was done since, and forget it.
	savepoint(ctx context.Context, tx *sqlx.Tx, name string) error
	rollbackTo(ctx context.Context, tx *sqlx.Tx, name string) error
	release(ctx context.Context, tx *sqlx.Tx, name string) error
}

// move is what a firing adds to a schedule's counts, and its next slot.
type move struct {
	name          string
	runs, skipped int64
	next          int64
}

// newDriver picks the driver of q's database: the one place that asks
// which database it is. A third database is a new pair of driver files
// and a line here.
func newDriver(q interface{ DriverName() string }) driver {
	if sqldb.DialectOf(q) == sqldb.Postgres {
		return postgresDriver{}
	}
	return sqliteDriver{}
}
