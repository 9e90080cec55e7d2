package schedule

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestDriverConformance runs the driver contract (driver.go) against the
// driver of every backend, with the same test body: what one database's
// driver does, every other's must.
func TestDriverConformance(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			for _, c := range driverCases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					db, _ := b.Open(t)
					require.NoError(t, sqldb.Migrate(context.Background(), db.DB, component, migrations))
					d := newDriver(db.DB)
					want := map[string]string{"sqlite": "schedule.sqliteDriver", "postgres": "schedule.postgresDriver"}[b.Name]
					require.Equal(t, want, fmt.Sprintf("%T", d), "the driver picked for %s", b.Name)
					c.test(t, d, db.DB)
				})
			}
		})
	}
}

// driverCases is the contract, a case a part of it.
var driverCases = []struct {
	name string
	test func(t *testing.T, d driver, db *sqlx.DB)
}{
	{"SchedulesRoundTrip", testSchedulesRoundTrip},
	{"InsertSchedulesKeepsWhatIsStored", testInsertSchedulesKeepsWhatIsStored},
	{"CountsAndNextSlotsMove", testCountsAndNextSlotsMove},
	{"PauseAndDelete", testPauseAndDelete},
	{"ASlotIsRecordedOnce", testASlotIsRecordedOnce},
	{"OpenRunsAndFinish", testOpenRunsAndFinish},
	{"RunsAreReadNewestFirst", testRunsAreReadNewestFirst},
	{"PruneDeletesFinishedRunsBefore", testPruneDeletesFinishedRunsBefore},
	{"SavepointsUndoTheirPart", testSavepointsUndoTheirPart},
}

var driverEpoch = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

// testRow is a schedule's row with every column set, distinct per i.
func testRow(name string, i int) state {
	return state{Name: name, Spec: fmt.Sprintf("every %dm", i+1), Hash: fmt.Sprintf("hash-%d", i), Command: "cmd-" + name,
		Payload: []byte{byte(i), 0, 0xff}, CatchUp: "all/1h0m0s/3", MaxRuns: i, Until: sqldb.EncodeTime(driverEpoch.Add(time.Duration(i) * time.Hour)),
		NextSlot: sqldb.EncodeTime(driverEpoch.Add(time.Duration(i) * time.Minute)), Jitter: int64(i) * int64(time.Second), Overlap: "buffer-one"}
}

// inTestTx runs f in a transaction that commits, or rolls back when f
// fails the test (an open transaction would hold its locks past the
// test's end, and its cleanup would wait for them).
func inTestTx(t *testing.T, db *sqlx.DB, f func(tx *sqlx.Tx)) {
	t.Helper()
	tx, err := db.BeginTxx(context.Background(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone
	f(tx)
	require.NoError(t, tx.Commit())
}

func testSchedulesRoundTrip(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	rows := []state{testRow("b", 1), testRow("a", 2), testRow("c", 3)}
	for _, r := range rows {
		require.NoError(t, d.insertSchedule(ctx, db, r))
	}
	require.Error(t, d.insertSchedule(ctx, db, testRow("a", 9)), "a name already stored")

	all, err := d.schedules(ctx, db)
	require.NoError(t, err)
	require.Equal(t, []state{rows[1], rows[0], rows[2]}, all, "every row, by name, as stored")

	of, err := d.schedulesOf(ctx, db, []string{"c", "missing", "a"})
	require.NoError(t, err)
	require.Equal(t, map[string]state{"a": rows[1], "c": rows[2]}, of)

	hashes, err := d.hashesOf(ctx, db, []string{"b", "missing"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"b": "hash-1"}, hashes)

	changed := testRow("a", 7)
	inTestTx(t, db, func(tx *sqlx.Tx) {
		require.NoError(t, d.recordFired(ctx, tx, []move{{name: "a", runs: 2, skipped: 1, next: 5}}))
		require.NoError(t, d.setPaused(ctx, tx, "a", true, 5))
		require.NoError(t, d.updateDefinition(ctx, tx, changed))
		st, found, err := d.lockSchedule(ctx, tx, "a")
		require.NoError(t, err)
		require.True(t, found)
		changed.Runs, changed.Skipped, changed.Paused = 2, 1, 1
		require.Equal(t, changed, st, "the definition and next slot replaced; counts and pause kept")
		_, found, err = d.lockSchedule(ctx, tx, "missing")
		require.NoError(t, err)
		require.False(t, found)
	})
}

func testInsertSchedulesKeepsWhatIsStored(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	require.NoError(t, d.insertSchedule(ctx, db, testRow("s0001", 0)))
	// More than a statement's rows on every driver: the chunks must add up.
	var rows []state
	var want []string
	for i := range 2*max(sqliteChunk, postgresInsertChunk) + 1 {
		name := fmt.Sprintf("s%04d", i)
		rows = append(rows, testRow(name, i))
		if name != "s0001" {
			want = append(want, name)
		}
	}
	var got []string
	inTestTx(t, db, func(tx *sqlx.Tx) {
		var err error
		got, err = d.insertSchedules(ctx, tx, rows)
		require.NoError(t, err)
	})
	slices.Sort(got)
	require.Equal(t, want, got, "every new name, and not the one stored already")

	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name
	}
	stored, err := d.schedulesOf(ctx, db, names)
	require.NoError(t, err)
	require.Len(t, stored, len(rows))
	require.Equal(t, testRow("s0001", 0), stored["s0001"], "the stored row left as it was")
	require.Equal(t, rows[len(rows)-1], stored[rows[len(rows)-1].Name])
	hashes, err := d.hashesOf(ctx, db, names)
	require.NoError(t, err)
	require.Len(t, hashes, len(rows))
}

func testCountsAndNextSlotsMove(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	var moves []move
	for i := range sqliteChunk + 1 {
		name := fmt.Sprintf("m%04d", i)
		require.NoError(t, d.insertSchedule(ctx, db, testRow(name, i)))
		moves = append(moves, move{name: name, runs: int64(i % 2), skipped: int64(i % 3), next: int64(1000 + i)})
	}
	inTestTx(t, db, func(tx *sqlx.Tx) {
		require.NoError(t, d.recordFired(ctx, tx, moves))
		require.NoError(t, d.recordFired(ctx, tx, moves[:1]))
	})
	all, err := d.schedules(ctx, db)
	require.NoError(t, err)
	require.Len(t, all, len(moves))
	for i, st := range all {
		m := moves[i]
		if i == 0 {
			m.runs, m.skipped = 2*m.runs, 2*m.skipped // moved twice
		}
		require.Equal(t, move{name: st.Name, runs: st.Runs, skipped: st.Skipped, next: st.NextSlot}, m)
	}
}

func testPauseAndDelete(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	require.NoError(t, d.insertSchedule(ctx, db, testRow("p", 1)))
	require.NoError(t, d.insertSchedule(ctx, db, testRow("q", 2)))
	require.NoError(t, d.setPaused(ctx, db, "p", true, 0))
	all, err := d.schedules(ctx, db)
	require.NoError(t, err)
	require.Equal(t, 1, all[0].Paused)
	require.Zero(t, all[0].NextSlot)
	require.NoError(t, d.setPaused(ctx, db, "p", false, 77))
	require.NoError(t, d.deleteSchedule(ctx, db, "q"))
	all, err = d.schedules(ctx, db)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, 0, all[0].Paused)
	require.Equal(t, int64(77), all[0].NextSlot)
}

// testRun is a run of schedule name at driverEpoch plus i minutes.
func testRun(name string, i int) Run {
	slot := driverEpoch.Add(time.Duration(i) * time.Minute)
	return Run{RunID: fmt.Sprintf("run-%s-%d", name, i), SlotID: SlotID(name, slot), Schedule: name, Slot: slot, FiredAt: slot.Add(time.Second), Attempt: 1 + i%3}
}

func testASlotIsRecordedOnce(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	var runs []Run
	for i := range sqliteChunk + 1 {
		runs = append(runs, testRun("r", i))
	}
	inTestTx(t, db, func(tx *sqlx.Tx) {
		recorded, err := d.insertRuns(ctx, tx, runs)
		require.NoError(t, err)
		require.Len(t, recorded, len(runs))
		for _, r := range runs {
			require.True(t, recorded[r.SlotID], r.SlotID)
		}
	})
	// The same slots again, as another replica or a retried attempt would
	// record them, with a slot not recorded yet among them.
	again := []Run{testRun("r", 0), testRun("r", 5), testRun("r", len(runs))}
	for i := range again {
		again[i].RunID += "-again"
	}
	inTestTx(t, db, func(tx *sqlx.Tx) {
		recorded, err := d.insertRuns(ctx, tx, again)
		require.NoError(t, err)
		require.Equal(t, map[string]bool{again[2].SlotID: true}, recorded, "a slot recorded already is refused")
	})
	var count int
	require.NoError(t, db.GetContext(ctx, &count, "SELECT COUNT(*) FROM schedule_runs"))
	require.Equal(t, len(runs)+1, count, "one run a slot")
	first, err := d.runsOf(ctx, db, "r", MaxRunsRead)
	require.NoError(t, err)
	byID := map[string]RunRecord{}
	for _, r := range first {
		byID[r.SlotID] = r
	}
	require.Equal(t, runs[5].RunID, byID[runs[5].SlotID].RunID, "the first run of a slot stays")
	require.Equal(t, RunRecord{RunID: runs[7].RunID, SlotID: runs[7].SlotID, Schedule: "r", Slot: runs[7].Slot, FiredAt: runs[7].FiredAt,
		Attempt: runs[7].Attempt, Finished: true}, normalise(byID[runs[7].SlotID]), "a run reads back as recorded, finished")

	manual := testRun("r", 3)
	manual.SlotID, manual.RunID, manual.Manual = "r@manual/x", "manual-x", true
	recorded, err := d.insertRuns(ctx, db, []Run{manual})
	require.NoError(t, err)
	require.True(t, recorded[manual.SlotID])
	recs, err := d.runsOf(ctx, db, "r", MaxRunsRead)
	require.NoError(t, err)
	i := slices.IndexFunc(recs, func(r RunRecord) bool { return r.RunID == "manual-x" })
	require.True(t, recs[i].Manual, "the manual flag is stored")
}

// normalise puts a record's times in UTC, for comparison.
func normalise(r RunRecord) RunRecord {
	r.Slot, r.FiredAt = r.Slot.UTC(), r.FiredAt.UTC()
	return r
}

func testOpenRunsAndFinish(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	runs := []Run{testRun("a", 0), testRun("a", 1), testRun("b", 0), testRun("c", 0)}
	_, err := d.insertRuns(ctx, db, runs)
	require.NoError(t, err)
	open, err := d.openRuns(ctx, db)
	require.NoError(t, err)
	require.Empty(t, open, "runs are recorded finished")

	require.NoError(t, d.markRunning(ctx, db, []string{runs[0].RunID, runs[1].RunID, runs[2].RunID}))
	open, err = d.openRuns(ctx, db)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2, "b": 1}, open)
	open, err = d.openRunsOf(ctx, db, []string{"a", "c", "missing"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2}, open)
	open, err = d.openRunsOf(ctx, db, nil)
	require.NoError(t, err)
	require.Empty(t, open)

	schedule, finished, found, err := d.runOf(ctx, db, runs[1].RunID)
	require.NoError(t, err)
	require.Equal(t, []any{"a", false, true}, []any{schedule, finished, found})
	require.NoError(t, d.finishRun(ctx, db, runs[1].RunID))
	require.NoError(t, d.finishRun(ctx, db, runs[1].RunID), "finishing a finished run changes nothing")
	schedule, finished, found, err = d.runOf(ctx, db, runs[1].RunID)
	require.NoError(t, err)
	require.Equal(t, []any{"a", true, true}, []any{schedule, finished, found})
	_, _, found, err = d.runOf(ctx, db, "no-such-run")
	require.NoError(t, err)
	require.False(t, found)
	open, err = d.openRuns(ctx, db)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 1, "b": 1}, open)
}

func testRunsAreReadNewestFirst(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	// Two manual runs at one instant, fired at different moments, and
	// two with the same slot and firing instant: the run id decides.
	runs := []Run{testRun("n", 2), testRun("n", 0), testRun("n", 1), testRun("other", 5)}
	m1 := testRun("n", 1)
	m1.SlotID, m1.RunID, m1.Manual, m1.FiredAt = "n@manual/1", "m1", true, m1.FiredAt.Add(time.Second)
	m2 := m1
	m2.SlotID, m2.RunID = "n@manual/2", "m2"
	runs = append(runs, m2, m1)
	_, err := d.insertRuns(ctx, db, runs)
	require.NoError(t, err)
	got, err := d.runsOf(ctx, db, "n", MaxRunsRead)
	require.NoError(t, err)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.RunID)
	}
	require.Equal(t, []string{"run-n-2", "m2", "m1", "run-n-1", "run-n-0"}, ids)
	got, err = d.runsOf(ctx, db, "n", 2)
	require.NoError(t, err)
	require.Len(t, got, 2, "at most limit")
	got, err = d.runsOf(ctx, db, "missing", 5)
	require.NoError(t, err)
	require.Empty(t, got)
}

func testPruneDeletesFinishedRunsBefore(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	var runs []Run
	for i := range 10 {
		runs = append(runs, testRun("p", i))
	}
	_, err := d.insertRuns(ctx, db, runs)
	require.NoError(t, err)
	require.NoError(t, d.markRunning(ctx, db, []string{runs[1].RunID}))
	before := sqldb.EncodeTime(runs[6].Slot) // runs 0 to 5, less the open one: 5
	n, err := d.pruneRuns(ctx, db, before, 3)
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "at most limit")
	n, err = d.pruneRuns(ctx, db, before, 3)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	n, err = d.pruneRuns(ctx, db, before, 3)
	require.NoError(t, err)
	require.Zero(t, n)
	left, err := d.runsOf(ctx, db, "p", MaxRunsRead)
	require.NoError(t, err)
	var ids []string
	for _, r := range left {
		ids = append(ids, r.RunID)
	}
	require.Equal(t, []string{"run-p-9", "run-p-8", "run-p-7", "run-p-6", "run-p-1"}, ids, "the later runs and the open one stay")
}

func testSavepointsUndoTheirPart(t *testing.T, d driver, db *sqlx.DB) {
	ctx := context.Background()
	inTestTx(t, db, func(tx *sqlx.Tx) {
		require.NoError(t, d.insertSchedule(ctx, tx, testRow("kept", 1)))
		require.NoError(t, d.savepoint(ctx, tx, "first_part"))
		require.NoError(t, d.insertSchedule(ctx, tx, testRow("undone", 2)))
		require.NoError(t, d.rollbackTo(ctx, tx, "first_part"))
		require.NoError(t, d.release(ctx, tx, "first_part"))
		require.NoError(t, d.savepoint(ctx, tx, "second_part"))
		require.NoError(t, d.insertSchedule(ctx, tx, testRow("released", 3)))
		require.NoError(t, d.release(ctx, tx, "second_part"))
	})
	all, err := d.schedules(ctx, db)
	require.NoError(t, err)
	var names []string
	for _, st := range all {
		names = append(names, st.Name)
	}
	require.Equal(t, []string{"kept", "released"}, names)
}
