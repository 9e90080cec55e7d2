package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Run is one firing of a schedule, as its Handler sees it.
type Run struct {
	// RunID is fresh for every run: the run's own correlation id.
	RunID string
	// SlotID is the schedule's name and the slot's instant: the same for
	// every attempt of the same slot on every replica, so a receiver can
	// deduplicate by it. A manual run's slot id names the run instead.
	SlotID string
	// Schedule is the schedule's name.
	Schedule string
	// Slot is the instant the run was planned for; FiredAt when it fired.
	Slot, FiredAt time.Time
	// Attempt counts from 1; it grows when a run failed and is retried.
	Attempt int
	// Manual is true for a run started by Trigger, outside the plan.
	Manual bool
	// Command and Payload are the schedule's.
	Command string
	Payload []byte
}

// Handler receives each run of every schedule, inside the transaction that
// records the run and moves the schedule to its next slot: what it writes
// with tx (an outbox row, an event) commits with the run or not at all. An
// error rolls everything back; the slot is tried again after a backoff,
// with the same SlotID. A run may be attempted more than once (a crash
// after the handler's side effects outside tx, or another slot of its
// batch failing after it: the batch is then fired again slot by slot),
// never recorded twice.
//
// Keep it short: it hands the command over, it does not do the work.
// The transaction is open while it runs, and on SQLite it holds the
// database's write lock. Work that takes long goes to a queue or another
// service; the handler then returns ErrStillRunning, and whoever finishes
// the work calls Scheduler.Finish, so that the schedule's Overlap policy
// knows the run is still open meanwhile.
type Handler func(ctx context.Context, tx *sqlx.Tx, run Run) error

// SlotID is the deterministic id of a schedule's slot: its name and the
// slot's instant in UTC.
func SlotID(name string, slot time.Time) string {
	return name + "@" + slot.UTC().Format(time.RFC3339Nano)
}

// newRunID returns a fresh run id: a UUID of version 7, whose first bits
// are the time, so that the runs of a minute go to the end of the run id
// index instead of all over it (random ids made recording a run markedly
// slower when many schedules share a minute).
func newRunID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString() // no time to be had: random will do
	}
	return id.String()
}

// RunRecord is a recorded run of a schedule.
type RunRecord struct {
	RunID, SlotID, Schedule string
	// Slot is the instant the run was planned for; FiredAt when it fired.
	Slot, FiredAt time.Time
	Attempt       int
	// Manual is true for a run started by Trigger.
	Manual bool
	// Finished is false while a run whose handler returned
	// ErrStillRunning waits for Finish.
	Finished bool
}

// Outcome names how the run stands: "running" until it is finished,
// then "fired" — or "fired (attempt n)" when earlier attempts failed and
// were rolled back — and "triggered" for a manual run.
func (r RunRecord) Outcome() string {
	switch {
	case !r.Finished:
		return "running"
	case r.Manual:
		return "triggered"
	case r.Attempt > 1:
		return fmt.Sprintf("fired (attempt %d)", r.Attempt)
	}
	return "fired"
}

// SlotsSkipped reports slots a catch-up policy did not fire, published
// (WithPublisher) after the transaction that counted them commits.
type SlotsSkipped struct {
	Schedule string
	// From and To are the first and last skipped slots; Count how many
	// there were (from From to To inclusive).
	From, To time.Time
	Count    int64
	// Policy names the catch-up policy: "all", "latest-only" or "skip".
	Policy string
}

// runRow is a run's row.
type runRow struct {
	SlotID   string `db:"slot_id"`
	RunID    string `db:"run_id"`
	Schedule string `db:"schedule"`
	Slot     int64  `db:"slot"`
	FiredAt  int64  `db:"fired_at"`
	Attempt  int    `db:"attempt"`
	Manual   int    `db:"manual"`
	Finished int    `db:"finished"`
}

// runRecord is the run r records.
func (r runRow) runRecord() RunRecord {
	return RunRecord{RunID: r.RunID, SlotID: r.SlotID, Schedule: r.Schedule, Slot: sqldb.DecodeTime(r.Slot), FiredAt: sqldb.DecodeTime(r.FiredAt),
		Attempt: r.Attempt, Manual: r.Manual != 0, Finished: r.Finished != 0}
}

// openCount is a row of a count of open runs: the schedule, and how
// many.
type openCount struct {
	Schedule string `db:"schedule"`
	N        int    `db:"n"`
}

// openByName keys counts of open runs by schedule.
func openByName(rows []openCount) map[string]int {
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Schedule] = r.N
	}
	return out
}
