package schedule_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

func TestReadSchedulesAndRunsReadWhatTheSchedulerStored(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			warsaw, err := time.LoadLocation("Europe/Warsaw")
			require.NoError(t, err)
			// "long" runs stay open until Finish.
			rec := &recorder{fail: func(r schedule.Run) error {
				if r.Schedule == "long" {
					return schedule.ErrStillRunning
				}
				return nil
			}}
			n := newNode(t, db.DB, clock, rec)
			until := start.Add(30 * 24 * time.Hour)
			_, err = n.s.Sync(ctx,
				schedule.Definition{Name: "hourly", Spec: mustSpec(t)(schedule.Cron("0 * * * *", warsaw)), Command: "report"},
				schedule.Definition{Name: "long", Spec: mustSpec(t)(schedule.Every(90*time.Minute, start)), Command: "export", Until: until},
				schedule.Definition{Name: "twice", Spec: mustSpec(t)(schedule.Cron("30 * * * *", nil)), MaxRuns: 2,
					CatchUp: tick.All{Window: 24 * time.Hour, Max: 100}},
				schedule.Definition{Name: "paused", Spec: mustSpec(t)(schedule.Cron("@daily", nil))})
			require.NoError(t, err)
			require.NoError(t, n.s.Pause(ctx, "paused"))
			for range 5 {
				clock.Advance(time.Hour)
				n.process(t, clock)
			}
			_, err = n.s.Trigger(ctx, "hourly")
			require.NoError(t, err)
			_, err = n.s.Trigger(ctx, "hourly")
			require.NoError(t, err)
			var longRuns []schedule.Run
			for _, r := range rec.runs {
				if r.Schedule == "long" {
					longRuns = append(longRuns, r)
				}
			}
			require.Len(t, longRuns, 3)
			require.NoError(t, n.s.Finish(ctx, longRuns[0].RunID))

			states, err := n.s.List(ctx)
			require.NoError(t, err)
			stored, err := schedule.ReadSchedules(ctx, db)
			require.NoError(t, err)
			require.Len(t, stored, len(states))
			for i, s := range stored {
				require.Equal(t, states[i].Name, s.Name)
				require.True(t, states[i].Next.Equal(s.Next), "%s: next %s, the scheduler says %s", s.Name, s.Next, states[i].Next)
				next := s.Next
				s.Next, states[i].Next = time.Time{}, time.Time{}
				require.Equal(t, states[i].Zone.String(), s.Zone.String())
				zone := s.Zone
				require.True(t, states[i].Until.Equal(s.Until))
				until := s.Until
				// Each read loads its own *time.Location.
				s.Zone, states[i].Zone, s.Until, states[i].Until = nil, nil, time.Time{}, time.Time{}
				require.Equal(t, states[i], s, "List and ReadSchedules report the same")
				s.Zone, s.Until = zone, until
				if !next.IsZero() {
					require.Equal(t, s.Zone, next.Location(), "%s: the next slot is shown in the schedule's zone", s.Name)
				}
			}
			byName := map[string]schedule.Stored{}
			for _, s := range stored {
				byName[s.Name] = s
			}
			require.Equal(t, "Europe/Warsaw", byName["hourly"].Zone.String())
			require.Equal(t, "UTC", byName["twice"].Zone.String())
			require.Equal(t, 2, byName["long"].Open, "two runs of long are still open")
			require.Zero(t, byName["hourly"].Open)
			require.True(t, byName["long"].Until.Equal(until))
			require.Equal(t, 2, byName["twice"].MaxRuns)
			require.True(t, byName["twice"].Next.IsZero(), "twice has ended")
			require.True(t, byName["paused"].Paused)
			require.NotEqual(t, byName["twice"].CatchUp, byName["hourly"].CatchUp)

			// Runs: brute force from what the handler saw, newest slot first;
			// the two triggers share an instant, the later run id first.
			for _, name := range []string{"hourly", "long", "twice", "paused", "unknown"} {
				var want []schedule.Run
				for _, r := range rec.runs {
					if r.Schedule == name {
						want = append(want, r)
					}
				}
				slices.SortFunc(want, func(a, b schedule.Run) int {
					return cmp.Or(b.Slot.Compare(a.Slot), b.FiredAt.Compare(a.FiredAt), cmp.Compare(b.RunID, a.RunID))
				})
				for _, limit := range []int{1, 2, schedule.MaxRunsRead} {
					got, err := schedule.ReadRuns(ctx, db, name, limit)
					require.NoError(t, err)
					require.Len(t, got, min(limit, len(want)), "%s, limit %d", name, limit)
					for i, r := range got {
						w := want[i]
						require.Equal(t, w.RunID, r.RunID, "%s run %d", name, i)
						require.Equal(t, w.SlotID, r.SlotID)
						require.Equal(t, name, r.Schedule)
						require.True(t, w.Slot.Equal(r.Slot))
						require.True(t, w.FiredAt.Equal(r.FiredAt))
						require.Equal(t, w.Attempt, r.Attempt)
						require.Equal(t, w.Manual, r.Manual)
						finished := name != "long" || w.RunID == longRuns[0].RunID
						require.Equal(t, finished, r.Finished, "%s run %s", name, r.RunID)
						switch {
						case !finished:
							require.Equal(t, "running", r.Outcome())
						case w.Manual:
							require.Equal(t, "triggered", r.Outcome())
						default:
							require.Equal(t, "fired", r.Outcome())
						}
					}
				}
			}
		})
	}
}

func TestScheduleInspectionReadsAnEmptyDatabaseAndCreatesNothing(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			stored, err := schedule.ReadSchedules(ctx, db)
			require.NoError(t, err)
			require.Empty(t, stored)
			runs, err := schedule.ReadRuns(ctx, db, "hourly", 10)
			require.NoError(t, err)
			require.Empty(t, runs)
			tables, err := sqldb.Tables(ctx, db)
			require.NoError(t, err)
			require.Empty(t, tables, "reading created tables")
		})
	}
}

func TestReadRunsRejectsALimitOutOfRange(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	for _, limit := range []int{0, -1, schedule.MaxRunsRead + 1} {
		_, err := schedule.ReadRuns(context.Background(), db, "hourly", limit)
		require.ErrorContains(t, err, `schedule: read runs of "hourly": limit`)
	}
}

// HasState and Count read a database without migrating it: none of the
// package's tables reads as no schedules, and creates none; once Open
// ran, Count counts every stored schedule, paused ones included, and
// HasState stays true after the last one is deleted.
func TestHasStateAndCountReadWithoutMigrating(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqldbtest.CheckHasState(t, hasSchedules, "tick_cursors", func(t *testing.T, db *sqldb.DB) *schedule.Scheduler {
		clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
		return newNode(t, db.DB, clock, &recorder{}).s
	}, func(t *testing.T, db *sqldb.DB, s *schedule.Scheduler) {
		_, err := s.Sync(ctx,
			schedule.Definition{Name: "hourly", Spec: mustSpec(t)(schedule.Cron("0 * * * *", nil))},
			schedule.Definition{Name: "nightly", Spec: mustSpec(t)(schedule.Cron("@daily", nil))},
			schedule.Definition{Name: "paused", Spec: mustSpec(t)(schedule.Cron("@daily", nil))})
		require.NoError(t, err)
		require.NoError(t, s.Pause(ctx, "paused"))
		tx, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		count, err := schedule.Count(ctx, tx)
		require.NoError(t, err)
		require.Equal(t, 3, count, "through a transaction, the paused one counted")
		require.NoError(t, tx.Rollback())

		for _, name := range []string{"hourly", "nightly", "paused"} {
			require.NoError(t, s.Delete(ctx, name))
		}
		count, err = schedule.Count(ctx, db)
		require.NoError(t, err)
		require.Zero(t, count)
		has, err := schedule.HasState(ctx, db)
		require.NoError(t, err)
		require.True(t, has, "the tables stay when the schedules go")
	})
}

// hasSchedules is schedule.HasState, and fails where Count disagrees
// with it: a database without the tables holds no schedules.
func hasSchedules(ctx context.Context, q sqlx.ExtContext) (bool, error) {
	has, err := schedule.HasState(ctx, q)
	if err != nil || has {
		return has, err
	}
	if n, err := schedule.Count(ctx, q); err != nil || n != 0 {
		return false, fmt.Errorf("no tables, yet Count says %d, %v", n, err)
	}
	return false, nil
}
