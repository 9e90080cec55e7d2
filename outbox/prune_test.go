package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/outbox"
)

// heldRecord is a record as the table holds it, read by the test itself.
type heldRecord struct {
	Key        string `db:"key"`
	Tx         int64  `db:"tx"`
	ID         int64  `db:"id"`
	RecordedAt int64  `db:"recorded_at"`
}

// checkpointRow is a row of outbox_checkpoints, read by the test itself.
type checkpointRow struct {
	Sink   string `db:"sink"`
	Stream string `db:"stream"`
	Tx     int64  `db:"tx"`
	ID     int64  `db:"id"`
}

func held(t *testing.T, db *sqldb.DB) []heldRecord {
	t.Helper()
	var rows []heldRecord
	require.NoError(t, db.SelectContext(context.Background(), &rows, `SELECT key, tx, id, recorded_at FROM outbox_records ORDER BY tx, id`))
	return rows
}

func heldKeys(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	var keys []string
	for _, r := range held(t, db) {
		keys = append(keys, r.Key)
	}
	slices.Sort(keys)
	return keys
}

func checkpoints(t *testing.T, db *sqldb.DB) []checkpointRow {
	t.Helper()
	var rows []checkpointRow
	require.NoError(t, db.SelectContext(context.Background(), &rows, `SELECT sink, stream, tx, id FROM outbox_checkpoints ORDER BY sink, stream`))
	return rows
}

// prunable is the test's own reading of the rule, from the rows: a
// record goes when it was recorded before cutoff and every sink the
// outbox knows (a checkpoint row or a refusal row) has its own
// checkpoint at or after it in (tx, id) order; a sink without one has
// passed nothing. Sorted keys.
func prunable(t *testing.T, db *sqldb.DB, cutoff time.Time) []string {
	t.Helper()
	sinks := map[string]*checkpointRow{}
	for _, c := range checkpoints(t, db) {
		if _, ok := sinks[c.Sink]; !ok {
			sinks[c.Sink] = nil
		}
		if c.Stream == "" {
			sinks[c.Sink] = &c
		}
	}
	var refusing []string
	require.NoError(t, db.SelectContext(context.Background(), &refusing, `SELECT DISTINCT sink FROM outbox_attempts`))
	for _, s := range refusing {
		if _, ok := sinks[s]; !ok {
			sinks[s] = nil
		}
	}
	var out []string
	for _, r := range held(t, db) {
		passed := len(sinks) > 0 && r.RecordedAt < sqldb.EncodeTime(cutoff)
		for _, c := range sinks {
			if c == nil || r.Tx > c.Tx || r.Tx == c.Tx && r.ID > c.ID {
				passed = false
			}
		}
		if passed {
			out = append(out, r.Key)
		}
	}
	slices.Sort(out)
	return out
}

// keyRange is prefix+from ... prefix+to.
func keyRange(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(prefix, i))
	}
	return out
}

// Ten days of records on three streams, read by three sinks: one took
// everything, one took everything but c2, which it parked, and one — a
// Run — stalls on b4 while it takes every record of a and c (its stream
// checkpoints past them, its own just before b4). Pruning at a 3.5-day
// retention removes exactly the records the test's own reading of the
// checkpoints calls passed by every sink and old (days 0 to 5, but b4 and
// what follows it in order); b4 and everything after it stay while the
// sink stalls, and go once it took them. c2's refusal goes with it.
func TestPruneRemovesExactlyWhatEverySinkPassedAndIsOld(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(t0)
			db, o := open(t, b, clock)
			const days = 10
			for day := range days {
				if day > 0 {
					clock.Advance(24 * time.Hour)
				}
				write(t, db, o, rec("a", fmt.Sprint("a", day)), rec("b", fmt.Sprint("b", day)), rec("c", fmt.Sprint("c", day)))
			}
			all := heldKeys(t, db)
			require.Len(t, all, 3*days)

			everything := &receiver{}
			r1, err := outbox.NewRelay(o, "everything", everything.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			passUntil(t, r1, everything, 3*days)
			parks := &receiver{refuse: func(m outbox.Message) error {
				if m.Key == "c2" {
					return errors.New("422")
				}
				return nil
			}}
			r2, err := outbox.NewRelay(o, "parks", parks.deliver, outbox.WithFrom(outbox.FromBeginning), outbox.WithMaxAttempts(1))
			require.NoError(t, err)
			passUntil(t, r2, parks, 3*days-1)
			parked, err := o.Parked(ctx, "parks")
			require.NoError(t, err)
			require.Len(t, parked, 1)

			stalled := newStallSink("b4")
			r3, err := outbox.NewRelay(o, "stalled", stalled.deliver, outbox.WithFrom(outbox.FromBeginning), outbox.WithPoll(5*time.Millisecond))
			require.NoError(t, err)
			running(t, r3)
			require.Equal(t, "b4", stalled.next(t))
			waitFor(t, "a and c taken while b4 stalls", func() bool {
				return stalled.hasAll(slices.Concat(keyRange("a", 0, 9), keyRange("c", 0, 9), keyRange("b", 0, 3))...)
			})
			var b4, a9, c9 heldRecord
			for _, r := range held(t, db) {
				switch r.Key {
				case "b4":
					b4 = r
				case "a9":
					a9 = r
				case "c9":
					c9 = r
				}
			}
			waitFor(t, "the stalled sink's checkpoint just before b4, its streams' past a9 and c9", func() bool {
				var sinkAt, aAt, cAt checkpointRow
				for _, c := range checkpoints(t, db) {
					if c.Sink == "stalled" {
						switch c.Stream {
						case "":
							sinkAt = c
						case "a":
							aAt = c
						case "c":
							cAt = c
						}
					}
				}
				return sinkAt.Tx == b4.Tx && sinkAt.ID == b4.ID-1 && aAt.ID == a9.ID && cAt.ID == c9.ID
			})

			const retention = 84 * time.Hour // 3.5 days: days 0 to 5 are older
			cutoff := clock.Now().Add(-retention)
			before := checkpoints(t, db)
			want := prunable(t, db, cutoff)
			// The scenario's own answer: a0-a4 (a4 comes before b4 in
			// order), b0-b3, c0-c3 (c2 parked counts as passed); nothing
			// at or after b4.
			require.Equal(t, slices.Sorted(slices.Values(slices.Concat(keyRange("a", 0, 4), keyRange("b", 0, 3), keyRange("c", 0, 3)))), want)
			n, err := o.Prune(ctx, retention)
			require.NoError(t, err)
			require.Equal(t, before, checkpoints(t, db), "no checkpoint moved meanwhile")
			require.Equal(t, len(want), n)
			require.Equal(t, difference(all, want), heldKeys(t, db), "exactly the passed and old ones went")
			for _, k := range slices.Concat(keyRange("b", 4, 9)) {
				require.Contains(t, heldKeys(t, db), k, "a record the stalled sink has not taken")
			}
			parked, err = o.Parked(ctx, "parks")
			require.NoError(t, err)
			require.Empty(t, parked, "a parked record goes with the retention")
			var refusals int
			require.NoError(t, db.GetContext(ctx, &refusals, `SELECT COUNT(*) FROM outbox_attempts`))
			require.Zero(t, refusals, "the refusals of pruned records go")
			n, err = o.Prune(ctx, retention)
			require.NoError(t, err)
			require.Zero(t, n, "nothing more to prune")

			close(stalled.stall["b4"])
			waitFor(t, "b after the release", func() bool { return stalled.hasAll(keyRange("b", 4, 9)...) })
			waitFor(t, "the stalled sink's checkpoint past everything", func() bool { return pendingOf(t, r3) == 0 && checkpointAtEnd(t, db, "stalled") })
			left := heldKeys(t, db)
			want = prunable(t, db, cutoff)
			require.Equal(t, slices.Sorted(slices.Values(slices.Concat(keyRange("a", 5, 5), keyRange("b", 4, 5), keyRange("c", 4, 5)))), want)
			n, err = o.Prune(ctx, retention)
			require.NoError(t, err)
			require.Equal(t, len(want), n)
			require.Equal(t, difference(left, want), heldKeys(t, db))

			// Retention 0: all that every sink passed, but what was
			// recorded this very instant.
			left = heldKeys(t, db)
			want = prunable(t, db, clock.Now())
			require.Equal(t, slices.Sorted(slices.Values(slices.Concat(keyRange("a", 6, 8), keyRange("b", 6, 8), keyRange("c", 6, 8)))), want)
			n, err = o.Prune(ctx, 0)
			require.NoError(t, err)
			require.Equal(t, len(want), n)
			require.Equal(t, []string{"a9", "b9", "c9"}, heldKeys(t, db))
			require.Equal(t, difference(left, want), heldKeys(t, db))
		})
	}
}

// checkpointAtEnd reports whether sink's own checkpoint is at the last
// record held.
func checkpointAtEnd(t *testing.T, db *sqldb.DB, sink string) bool {
	t.Helper()
	rows := held(t, db)
	last := rows[len(rows)-1]
	for _, c := range checkpoints(t, db) {
		if c.Sink == sink && c.Stream == "" {
			return c.Tx == last.Tx && c.ID == last.ID
		}
	}
	return false
}

// difference is a without b's keys, sorted.
func difference(a, b []string) []string {
	var out []string
	for _, k := range a {
		if !slices.Contains(b, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// With no sink known, nothing counts as passed: nothing is pruned. A sink
// that only ever refused (its refusals stored, no checkpoint) holds
// everything; ForgetSink lets go of it.
func TestPruneKeepsWhatNoSinkPassed(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(t0)
			db, o := open(t, b, clock)
			write(t, db, o, rec("a", "a1"), rec("a", "a2"))
			clock.Advance(30 * 24 * time.Hour)
			n, err := o.Prune(ctx, time.Hour)
			require.NoError(t, err)
			require.Zero(t, n, "no sink known")

			taker := &receiver{}
			r1, err := outbox.NewRelay(o, "taker", taker.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			passUntil(t, r1, taker, 2)
			// A sink known by a refusal alone (an outbox written before
			// relays stored where they start): its checkpoint is none.
			_, err = db.ExecContext(ctx, db.Rebind(`INSERT INTO outbox_attempts (sink, record, attempts, next_at, last_error, parked) VALUES (?, ?, 1, 0, 'no', 0)`),
				"refuser", held(t, db)[0].ID)
			require.NoError(t, err)
			require.Empty(t, prunable(t, db, clock.Now()))
			n, err = o.Prune(ctx, time.Hour)
			require.NoError(t, err)
			require.Zero(t, n, "the refusing sink passed nothing")

			require.NoError(t, o.ForgetSink(ctx, "refuser"))
			n, err = o.Prune(ctx, time.Hour)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			require.Empty(t, heldKeys(t, db))
		})
	}
}

// Pruning goes batch by batch, each a statement of its own, past records
// too young to go between old ones: 1,000 records in batches of 7, every
// third one recorded late (its clock behind), all passed by the sink.
func TestPruneGoesBatchByBatch(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(t0)
			db, _ := b.Open(t)
			o, err := outbox.Open(ctx, db.DB, outbox.WithClock(clock), outbox.WithPruneBatch(7))
			require.NoError(t, err)
			young := clockwork.NewFakeClockAt(t0.Add(time.Hour))
			oy, err := outbox.Open(ctx, db.DB, outbox.WithClock(young))
			require.NoError(t, err)
			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			var keep []string
			for i := range 1000 {
				w := o
				if i%3 == 0 {
					w = oy
					keep = append(keep, fmt.Sprint("k", i))
				}
				require.NoError(t, w.WriteTx(ctx, tx, rec(fmt.Sprint("s", i%5), fmt.Sprint("k", i))))
			}
			require.NoError(t, tx.Commit())
			r := &receiver{}
			relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			passUntil(t, relay, r, 1000)
			clock.Advance(30 * time.Minute)
			n, err := o.Prune(ctx, 10*time.Minute)
			require.NoError(t, err)
			require.Equal(t, 1000-len(keep), n)
			slices.Sort(keep)
			require.Equal(t, keep, heldKeys(t, db))
		})
	}
}

// RunPruner prunes at once, then every WithPruneEvery on the outbox's
// clock, until its context ends.
func TestRunPrunerPrunesOnTheClock(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			clock := clockwork.NewFakeClockAt(t0)
			db, _ := b.Open(t)
			o, err := outbox.Open(ctx, db.DB, outbox.WithClock(clock), outbox.WithPruneEvery(time.Hour))
			require.NoError(t, err)
			write(t, db, o, rec("a", "a1"))
			clock.Advance(2 * time.Hour)
			write(t, db, o, rec("a", "a2"))
			r := &receiver{}
			relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			passUntil(t, relay, r, 2)

			pctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- o.RunPruner(pctx, 30*time.Minute, func(err error) { t.Errorf("pruner: %v", err) })
			}()
			require.NoError(t, clock.BlockUntilContext(ctx, 1), "the pruner waits for its next turn")
			require.Equal(t, []string{"a2"}, heldKeys(t, db), "a1 at once")
			clock.Advance(time.Hour)
			waitFor(t, "a2 pruned at the next turn", func() bool { return len(heldKeys(t, db)) == 0 })
			stop()
			require.ErrorIs(t, <-done, context.Canceled)
		})
	}
}

// Bad input to pruning is refused, naming it.
func TestPruneBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, o := open(t, sqldbtest.Backend{Name: "sqlite", Open: sqldbtest.SQLite}, clockwork.NewFakeClockAt(t0))
	_, err := o.Prune(ctx, -time.Hour)
	require.ErrorIs(t, err, outbox.ErrInvalidArgument)
	require.ErrorContains(t, err, "-1h0m0s")
	require.ErrorIs(t, o.RunPruner(ctx, -time.Hour, nil), outbox.ErrInvalidArgument)
	require.ErrorIs(t, o.ForgetSink(ctx, ""), outbox.ErrInvalidArgument)
	for _, opt := range []outbox.Option{outbox.WithPruneBatch(0), outbox.WithPruneBatch(1_000_000), outbox.WithPruneEvery(0), outbox.WithMeterProvider(nil)} {
		_, err := outbox.Open(ctx, db.DB, opt)
		require.ErrorIs(t, err, outbox.ErrInvalidOption)
	}
}
