package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/outbox"
)

// A year of records, then sinks added: one by default delivers only
// what is written after its relay was made (by Pass, and by Run), and
// says where it started and how many records it leaves; one told
// FromBeginning delivers the year too; one told an instant delivers from
// the first record recorded then. Each stores where it starts before it
// delivers, so its next relay resumes there whatever it is told.
func TestANewSinkStartsWhereItIsTold(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			yearAgo := t0.AddDate(-1, 0, 0)
			clock := clockwork.NewFakeClockAt(yearAgo)
			db, o := open(t, b, clock)
			var old []string
			for day := range 365 {
				if day%73 == 0 { // five commits over the year, a stream a day
					var recs []outbox.Record
					for i := day; i < day+73; i++ {
						k := fmt.Sprint("old-", i)
						recs = append(recs, rec(fmt.Sprint("s", i%7), k))
						old = append(old, k)
					}
					write(t, db, o, recs...)
				}
				clock.Advance(24 * time.Hour)
			}
			require.Equal(t, t0, clock.Now())
			// On PostgreSQL a record is read only once the horizon (the
			// oldest transaction on the whole server) has passed it: a
			// probe that reads them all shows they are.
			probe := &receiver{}
			pr, err := outbox.NewRelay(o, "probe", probe.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			passUntil(t, pr, probe, len(old))

			var mu sync.Mutex
			var told []outbox.Origin
			started := outbox.Observer{Started: func(o outbox.Origin) {
				mu.Lock()
				defer mu.Unlock()
				told = append(told, o)
			}}
			byDefault := &receiver{}
			passing, err := outbox.NewRelay(o, "new", byDefault.deliver, outbox.WithObserver(started))
			require.NoError(t, err)
			running := &receiver{}
			runner, err := outbox.NewRelay(o, "new-run", running.deliver, outbox.WithPoll(5*time.Millisecond))
			require.NoError(t, err)
			everything := &receiver{}
			fromStart, err := outbox.NewRelay(o, "everything", everything.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			sinceMarch := &receiver{}
			// Day 146 is the first of the third commit (days 146 to 218).
			third := yearAgo.AddDate(0, 0, 146)
			fromInstant, err := outbox.NewRelay(o, "since", sinceMarch.deliver, outbox.WithFrom(outbox.FromInstant(third.Add(-time.Hour))))
			require.NoError(t, err)

			res, err := passing.Pass(ctx)
			require.NoError(t, err)
			require.Zero(t, res.Delivered, "nothing of the year")
			origin, err := passing.Origin(ctx)
			require.NoError(t, err)
			require.False(t, origin.Resumed)
			require.Equal(t, outbox.FromNow, origin.From)
			require.Equal(t, t0, origin.At)
			require.Equal(t, len(old), origin.Skipped)
			require.Contains(t, origin.String(), fmt.Sprintf("starts from now (%s): %d earlier records not delivered", t0.Format(time.RFC3339Nano), len(old)))
			kill := runningRelay(t, runner)
			defer kill()

			clock.Advance(time.Minute)
			fresh := []outbox.Record{rec("s1", "new-1"), rec("s2", "new-2"), rec("s1", "new-3")}
			write(t, db, o, fresh...)
			runner.Notify()
			passUntil(t, passing, byDefault, 3)
			require.ElementsMatch(t, []string{"new-1", "new-2", "new-3"}, byDefault.keys())
			require.Equal(t, []string{"new-1", "new-3"}, byDefault.keysOf("s1"))
			waitFor(t, "Run's sink to take the new records", func() bool { return running.hasAll("new-1", "new-2", "new-3") })
			require.Len(t, running.keys(), 3, "Run's sink takes nothing of the year either")
			mu.Lock()
			require.Equal(t, []outbox.Origin{origin}, told, "Started told once")
			mu.Unlock()

			passUntil(t, fromStart, everything, len(old)+3)
			require.ElementsMatch(t, append(append([]string(nil), old...), "new-1", "new-2", "new-3"), everything.keys())
			origin, err = fromStart.Origin(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Origin{From: outbox.FromBeginning}, origin)

			passUntil(t, fromInstant, sinceMarch, len(old)-146+3)
			require.ElementsMatch(t, append(append([]string(nil), old[146:]...), "new-1", "new-2", "new-3"), sinceMarch.keys())
			origin, err = fromInstant.Origin(ctx)
			require.NoError(t, err)
			require.Equal(t, 146, origin.Skipped)

			// Known sinks resume whatever they are told.
			write(t, db, o, rec("s3", "new-4"))
			again := &receiver{}
			resumed, err := outbox.NewRelay(o, "new", again.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			passUntil(t, resumed, again, 1)
			require.Equal(t, []string{"new-4"}, again.keys())
			origin, err = resumed.Origin(ctx)
			require.NoError(t, err)
			require.True(t, origin.Resumed)
			require.Contains(t, origin.String(), "resumes from its checkpoint")
		})
	}
}

// runningRelay runs relay until the returned kill is called (or the test
// ends).
func runningRelay(t *testing.T, relay *outbox.Relay) func() {
	t.Helper()
	return running(t, relay)
}

// A new sink's start on PostgreSQL never passes a record a transaction
// still open may commit: a record written before the relay was made, in
// a transaction committed after, is delivered (as are the others
// committed after it began), never skipped.
func TestANewSinkStartsBelowTheHorizon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.Postgres(t)
	clock := clockwork.NewFakeClockAt(t0)
	o, err := outbox.Open(ctx, db.DB, outbox.WithClock(clock))
	require.NoError(t, err)
	slow, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = slow.Rollback() }()
	require.NoError(t, o.WriteTx(ctx, slow, rec("s", "late"))) // recorded before now, committed after
	clock.Advance(time.Minute)
	r := &receiver{}
	relay, err := outbox.NewRelay(o, "hook", r.deliver)
	require.NoError(t, err)
	write(t, db, o, rec("s", "after"))
	_, err = relay.Pass(ctx)
	require.NoError(t, err)
	require.NoError(t, slow.Commit())
	passUntil(t, relay, r, 2)
	require.Equal(t, []string{"late", "after"}, r.keys(), "in order: one stream")
}

// ParseFrom reads what --from takes, and From is a flag value that
// prints it back; anything else is refused naming it.
func TestParseFrom(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want outbox.From
	}{
		{"beginning", outbox.FromBeginning},
		{"now", outbox.FromNow},
		{"2026-11-26T09:00:00Z", outbox.FromInstant(t0)},
		{"2026-11-26T10:00:00.5+01:00", outbox.FromInstant(t0.Add(500 * time.Millisecond).In(time.FixedZone("", 3600)))},
	} {
		got, err := outbox.ParseFrom(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want.String(), got.String(), c.in)
		var f outbox.From
		require.NoError(t, f.Set(c.in))
		require.Equal(t, c.in, f.String())
	}
	require.Equal(t, "now", outbox.From{}.String(), "the zero From is now")
	for _, bad := range []string{"", "yesterday", "Beginning", "2026-11-26", "2026-11-26 09:00", "3000-01-01T00:00:00Z"} {
		_, err := outbox.ParseFrom(bad)
		require.ErrorIs(t, err, outbox.ErrInvalidArgument, bad)
		require.ErrorContains(t, err, fmt.Sprintf("%q", bad))
	}
	_, o := open(t, sqldbtest.Backend{Name: "sqlite", Open: sqldbtest.SQLite}, clockwork.NewFakeClockAt(t0))
	_, err := outbox.NewRelay(o, "hook", func(context.Context, outbox.Message) error { return nil },
		outbox.WithFrom(outbox.FromInstant(sqldb.MaxTime.Add(time.Hour))))
	require.ErrorIs(t, err, outbox.ErrInvalidOption)
}
