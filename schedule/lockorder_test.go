package schedule_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
)

// A Pause, a changing Sync or a Delete of a schedule whose slot is firing
// on PostgreSQL waits for the firing to commit, then does its work: both
// lock the schedule's item before its row, so neither deadlocks the other
// (which would fail one of them, and a failed batch counts an attempt
// against every slot in it).
func TestAChangeWaitsForItsSchedulesFiring(t *testing.T) {
	t.Parallel()
	every := func(expr string) schedule.Spec { return mustSpec(t)(schedule.Cron(expr, nil)) }
	for _, c := range []struct {
		name   string
		change func(ctx context.Context, s *schedule.Scheduler) error
		want   func(t *testing.T, states []schedule.Stored)
	}{
		{"pause", func(ctx context.Context, s *schedule.Scheduler) error { return s.Pause(ctx, "poll") },
			func(t *testing.T, states []schedule.Stored) { require.True(t, states[0].Paused) }},
		{"sync", func(ctx context.Context, s *schedule.Scheduler) error {
			_, err := s.Sync(ctx, schedule.Definition{Name: "poll", Spec: every("*/5 * * * *"), Command: "poll"})
			return err
		}, func(t *testing.T, states []schedule.Stored) {
			require.Equal(t, "2026-05-01T00:05:00Z", states[0].Next.UTC().Format(time.RFC3339), "the new spec, counted from now")
		}},
		{"delete", func(ctx context.Context, s *schedule.Scheduler) error { return s.Delete(ctx, "poll") },
			func(t *testing.T, states []schedule.Stored) { require.Empty(t, states) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := sqldbtest.Postgres(t)
			clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 0, 0, 30, 0, time.UTC))
			firing, release := make(chan int, 1), make(chan struct{})
			var runs atomic.Int32
			s, err := schedule.Open(ctx, db.DB, func(ctx context.Context, tx *sqlx.Tx, _ schedule.Run) error {
				var pid int
				if err := tx.GetContext(ctx, &pid, `SELECT pg_backend_pid()`); err != nil {
					return err
				}
				if runs.Add(1) == 1 {
					firing <- pid
					<-release
				}
				return nil
			}, schedule.WithClock(clock))
			require.NoError(t, err)
			p, err := s.Processor()
			require.NoError(t, err)
			_, err = s.Sync(ctx, schedule.Definition{Name: "poll", Spec: every("* * * * *"), Command: "poll"})
			require.NoError(t, err)
			clock.Advance(30 * time.Second)

			fired := make(chan error, 1)
			go func() {
				res, err := p.Process(ctx, clock.Now())
				if err == nil && res.Done != 1 {
					err = fmt.Errorf("the firing did not complete: %+v", res)
				}
				fired <- err
			}()
			pid := <-firing // the batch holds the schedule's item
			changed := make(chan error, 1)
			go func() { changed <- c.change(ctx, s) }()
			waitForASessionBlockedBy(t, db.DB, pid)
			close(release)
			require.NoError(t, <-fired)
			require.NoError(t, <-changed)
			require.EqualValues(t, 1, runs.Load())
			states, err := s.List(ctx)
			require.NoError(t, err)
			c.want(t, states)
		})
	}
}

// waitForASessionBlockedBy returns once a session waits for a lock the
// session pid holds: the change has reached a row the firing holds.
func waitForASessionBlockedBy(t *testing.T, db *sqlx.DB, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var waiting int
		require.NoError(t, db.GetContext(ctx, &waiting, `SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid))
		if waiting > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no session came to wait for the firing's locks")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
