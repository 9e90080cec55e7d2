package schedule_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
)

func TestSyncSortsOneCallIntoAddedChangedAndUnchanged(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			hourly := schedule.Definition{Name: "hourly", Spec: mustSpec(t)(schedule.Every(time.Hour, start)), Command: "poll"}
			daily := schedule.Definition{Name: "daily", Spec: mustSpec(t)(schedule.Cron("0 9 * * *", nil)), Command: "report"}
			_, err := n.s.Sync(context.Background(), hourly, daily)
			require.NoError(t, err)

			clock.Advance(90 * time.Minute)
			weekly := schedule.Definition{Name: "weekly", Spec: mustSpec(t)(schedule.Cron("0 12 * * 5", nil)), Command: "invoice"}
			daily.Spec = mustSpec(t)(schedule.Cron("0 10 * * *", nil))
			res, err := n.s.Sync(context.Background(), weekly, hourly, daily)
			require.NoError(t, err)
			require.Equal(t, schedule.SyncResult{Added: []string{"weekly"}, Changed: []string{"daily"}, Unchanged: []string{"hourly"}}, res)
			for name, due := range map[string]time.Time{
				"hourly": start.Add(time.Hour),                         // kept: its slot came but was not fired yet
				"daily":  time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), // the new spec, from now
				"weekly": time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), // 2026-05-01 is a Friday
			} {
				item, err := n.s.ToDo().Get(context.Background(), name)
				require.NoError(t, err, name)
				require.True(t, item.Due.Equal(due), "%s due %s, want %s", name, item.Due, due)
			}
		})
	}
}

// More schedules than one statement takes (1,000 on SQLite): every one is
// stored with its first slot, and a second start finds them all unchanged.
func TestSyncStoresManySchedulesAcrossChunks(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 30, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			defs := make([]schedule.Definition, 2500)
			for i := range defs {
				// Every i+1 minutes: each schedule has a first slot of its own.
				defs[i] = schedule.Definition{Name: fmt.Sprintf("s-%04d", i), Spec: mustSpec(t)(schedule.Every(time.Duration(i+1)*time.Minute, start.Add(-30*time.Second))), Payload: []byte{byte(i)}}
			}
			res, err := n.s.Sync(context.Background(), defs...)
			require.NoError(t, err)
			require.Len(t, res.Added, len(defs))
			for _, i := range []int{0, 999, 1000, 2499} {
				item, err := n.s.ToDo().Get(context.Background(), defs[i].Name)
				require.NoError(t, err)
				want := start.Add(-30*time.Second + time.Duration(i+1)*time.Minute)
				require.True(t, item.Due.Equal(want), "%s due %s, want %s", defs[i].Name, item.Due, want)
			}
			again := newNode(t, db.DB, clock, &recorder{})
			res, err = again.s.Sync(context.Background(), defs...)
			require.NoError(t, err)
			require.Len(t, res.Unchanged, len(defs))

			// The first minute fires the first schedule with its payload.
			clock.Advance(time.Minute)
			again.process(t, clock)
			require.Len(t, again.rec.runs, 1)
			require.Equal(t, "s-0000", again.rec.runs[0].Schedule)
			require.Equal(t, []byte{0}, again.rec.runs[0].Payload)
		})
	}
}

// Two processes starting at once declare the same new schedules, in
// opposite orders: both Syncs succeed, each schedule is added by exactly
// one of them, and each has one item.
func TestConcurrentSyncsOfTheSameNewSchedules(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			other, err := sqldb.Open(context.Background(), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Close() })
			clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
			defs := make([]schedule.Definition, 1500)
			for i := range defs {
				defs[i] = schedule.Definition{Name: fmt.Sprint("s-", i), Spec: mustSpec(t)(schedule.Cron("*/5 * * * *", nil))}
			}
			reversed := slices.Clone(defs)
			slices.Reverse(reversed)
			nodes := []node{newNode(t, db.DB, clock, &recorder{}), newNode(t, other.DB, clock, &recorder{})}
			results := make([]schedule.SyncResult, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, declared := range [][]schedule.Definition{defs, reversed} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = nodes[i].s.Sync(context.Background(), declared...)
				}()
			}
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			added := append(slices.Clone(results[0].Added), results[1].Added...)
			require.Len(t, added, len(defs), "each schedule added once")
			slices.Sort(added)
			require.Len(t, slices.Compact(added), len(defs))
			for i := range results {
				require.Empty(t, results[i].Changed)
				require.Len(t, results[i].Unchanged, len(defs)-len(results[i].Added), "the other's schedules are unchanged")
			}
			due, err := nodes[0].s.ToDo().Due(context.Background(), clock.Now().Add(time.Hour), 10*len(defs))
			require.NoError(t, err)
			require.Len(t, due, len(defs), "one item each")
		})
	}
}

// A changed definition counts from now: a slot of the old one that had
// come but not fired is counted as skipped, not dropped silently.
func TestAChangeCountsTheSlotItDrops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 9, 59, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	def := schedule.Definition{Name: "daily", Spec: mustSpec(t)(schedule.Cron("0 10 * * *", nil)), Payload: []byte(`1`)}
	_, err := n.s.Sync(ctx, def)
	require.NoError(t, err)
	clock.Advance(90 * time.Second) // 10:00:30: the slot has come, no tick yet
	def.Payload = []byte(`2`)
	res, err := n.s.Sync(ctx, def)
	require.NoError(t, err)
	require.Equal(t, []string{"daily"}, res.Changed)
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), states[0].Skipped, "the 10:00 slot is counted as skipped")
	require.True(t, states[0].Next.Equal(time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)), "%s", states[0].Next)
}
