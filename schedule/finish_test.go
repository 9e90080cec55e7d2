package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
)

func TestATriggeredRunMayStayOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	db, _ := sqldbtest.SQLite(t)
	rec := &recorder{fail: func(schedule.Run) error { return schedule.ErrStillRunning }}
	n := newNode(t, db.DB, clock, rec)
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "long", Spec: mustSpec(t)(schedule.Cron("@daily", nil))})
	require.NoError(t, err)
	run, err := n.s.Trigger(ctx, "long")
	require.NoError(t, err, "a handler that hands the run over may be triggered")
	require.NoError(t, n.s.Finish(ctx, run.RunID))
}

// Finish respects the jitter as firing does: a slot that has come but
// whose jittered time has not is neither pulled forward nor lost, and a
// slot buffered behind the finished run (its jittered time came while
// the run was open) fires at once.
func TestFinishRespectsJitter(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		for _, overlap := range []schedule.Overlap{schedule.AllowOverlap, schedule.BufferOne} {
			t.Run(b.Name+"/"+overlap.String(), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db, _ := b.Open(t)
				start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
				clock := clockwork.NewFakeClockAt(start)
				var first string
				rec := &recorder{}
				rec.fail = func(r schedule.Run) error {
					if first == "" {
						first = r.RunID
						return schedule.ErrStillRunning
					}
					return nil
				}
				n := newNode(t, db.DB, clock, rec)
				hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
				_, err := n.s.Sync(ctx, schedule.Definition{Name: jitteredName, Spec: hourly, Jitter: 50 * time.Minute, Overlap: overlap})
				require.NoError(t, err)
				slot := start.Add(2 * time.Hour)
				for clock.Now().Before(slot) { // 01:00 fires and stays open
					clock.Advance(time.Minute)
					n.process(t, clock)
				}
				equalInstants(t, []time.Time{start.Add(time.Hour)}, n.rec.slots(jitteredName), "01:00 fired")
				item, err := n.s.ToDo().Get(ctx, jitteredName)
				require.NoError(t, err)
				due := item.Due
				require.True(t, due.After(slot.Add(10*time.Minute)), "the test needs 02:00's jitter to be over 10 minutes; it is %s: pick another name", due.Sub(slot))

				// 02:05: the 02:00 slot has come, its jittered time has not.
				clock.Advance(5 * time.Minute)
				require.NoError(t, n.s.Finish(ctx, first))
				n.process(t, clock)
				equalInstants(t, []time.Time{start.Add(time.Hour)}, n.rec.slots(jitteredName), "02:00 waits for its jitter")
				item, err = n.s.ToDo().Get(ctx, jitteredName)
				require.NoError(t, err)
				require.True(t, item.Due.Equal(due), "02:00 stays due at its jittered time %s, not %s", due, item.Due)
				for clock.Now().Before(due.Add(time.Minute)) {
					clock.Advance(time.Minute)
					n.process(t, clock)
				}
				equalInstants(t, []time.Time{start.Add(time.Hour), slot}, n.rec.slots(jitteredName), "02:00 fired at its jittered time, not lost")
				require.False(t, n.rec.runs[1].FiredAt.Before(due), "not before its jitter")
				states, err := n.s.List(ctx)
				require.NoError(t, err)
				require.Zero(t, states[0].Skipped)
				require.True(t, states[0].Next.Equal(start.Add(3*time.Hour)), "%s", states[0].Next)
				require.Equal(t, 50*time.Minute, states[0].Jitter)
				require.Equal(t, overlap, states[0].Overlap)
			})
		}
	}
}

// A slot buffered behind an open run (BufferOne) had its jittered time
// come; Finish makes it due at once.
func TestFinishFiresAJitteredBufferedSlotAtOnce(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			var first string
			rec := &recorder{}
			rec.fail = func(r schedule.Run) error {
				if first == "" {
					first = r.RunID
					return schedule.ErrStillRunning
				}
				return nil
			}
			n := newNode(t, db.DB, clock, rec)
			hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
			_, err := n.s.Sync(ctx, schedule.Definition{Name: jitteredName, Spec: hourly, Jitter: 50 * time.Minute, Overlap: schedule.BufferOne})
			require.NoError(t, err)
			slot := start.Add(2 * time.Hour)
			for clock.Now().Before(slot) {
				clock.Advance(time.Minute)
				n.process(t, clock)
			}
			item, err := n.s.ToDo().Get(ctx, jitteredName)
			require.NoError(t, err)
			due := item.Due
			for clock.Now().Before(due.Add(5 * time.Minute)) { // 02:00 is buffered
				clock.Advance(time.Minute)
				n.process(t, clock)
			}
			equalInstants(t, []time.Time{start.Add(time.Hour)}, n.rec.slots(jitteredName), "02:00 is buffered")
			require.NoError(t, n.s.Finish(ctx, first))
			n.process(t, clock)
			equalInstants(t, []time.Time{start.Add(time.Hour), slot}, n.rec.slots(jitteredName), "02:00 fires at once")
			require.True(t, n.rec.runs[1].FiredAt.Equal(clock.Now()))
		})
	}
}

// jitteredName is a schedule name whose 02:00 slot on 2026-05-01 has a
// jitter of more than 10 minutes out of 50 (TestFinishRespectsJitter
// checks it).
const jitteredName = "job"
