package outbox

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestDriverConformance holds every database's driver to the contract of
// the driver interface, with one test body: writes, reads after the
// checkpoint in commit order, checkpoints that move only forward,
// refusals, and the horizon — a record that commits late with a lower id
// is not skipped.
func TestDriverConformance(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := backend.Open(t)
			ctx := context.Background()
			o, err := Open(ctx, db.DB)
			require.NoError(t, err)
			d := o.d
			// SQLite has one writer: a transaction cannot commit beside
			// another that is open, so no record can commit late there.
			writersOverlap := backend.Name != "sqlite"

			write := func(ext *sqldb.DB, keys ...string) {
				t.Helper()
				tx, err := ext.BeginTxx(ctx, nil)
				require.NoError(t, err)
				defer func() { _ = tx.Rollback() }()
				for _, k := range keys {
					require.NoError(t, d.write(ctx, tx, Record{Key: k, Stream: "s-" + k[:1], Type: "t", Body: []byte(k)}, 5))
				}
				require.NoError(t, tx.Commit())
			}
			keys := func(rows []recordRow) []string {
				var out []string
				for _, r := range rows {
					out = append(out, r.Key)
				}
				return out
			}
			read := func(sink string, limit int) []recordRow {
				t.Helper()
				from, err := d.checkpoint(ctx, sink)
				require.NoError(t, err)
				rows, err := d.records(ctx, sink, from, limit)
				require.NoError(t, err)
				return rows
			}
			// visible waits until a sink without a checkpoint reads every
			// key given: on PostgreSQL a committed record is read only once
			// the horizon (the oldest transaction open on the whole server,
			// another test's too) has passed it.
			visible := func(want ...string) {
				t.Helper()
				require.Eventually(t, func() bool {
					got := keys(read("visible", 1000))
					for _, k := range want {
						if !slices.Contains(got, k) {
							return false
						}
					}
					return true
				}, 10*time.Second, 5*time.Millisecond, "records %v readable", want)
			}

			t.Run("write and read after the checkpoint", func(t *testing.T) {
				from, err := d.checkpoint(ctx, "w")
				require.NoError(t, err)
				require.Zero(t, from, "a sink without a checkpoint starts at the beginning")
				write(db, "a1", "b1", "a2")
				write(db, "a1") // a key stored already is left as it was
				visible("a1", "b1", "a2")
				rows := read("w", 10)
				require.Equal(t, []string{"a1", "b1", "a2"}, keys(rows))
				require.Equal(t, "a1", string(rows[0].Body))
				require.EqualValues(t, 5, rows[0].RecordedAt)
				n, oldest, err := d.backlog(ctx, "w", position{})
				require.NoError(t, err)
				require.Equal(t, 3, n)
				require.EqualValues(t, 5, oldest)

				require.Equal(t, []string{"a1", "b1"}, keys(read("w", 2)), "limit")
				first := rows[0]
				require.NoError(t, d.advance(ctx, "w", "", position{first.Tx, first.Position}))
				require.Equal(t, []string{"b1", "a2"}, keys(read("w", 10)))
				require.NoError(t, d.advance(ctx, "w", "", position{}))
				require.Equal(t, []string{"b1", "a2"}, keys(read("w", 10)), "a checkpoint never moves back")
				// A stream's checkpoint passes that stream's records only.
				a2 := rows[2]
				require.NoError(t, d.advance(ctx, "w", "s-a", position{a2.Tx, a2.Position}))
				require.Equal(t, []string{"b1"}, keys(read("w", 10)))
				require.Equal(t, []string{"a1", "b1", "a2"}, keys(read("other", 10)), "checkpoints are per sink")
			})

			t.Run("refusals", func(t *testing.T) {
				write(db, "c1", "c2")
				visible("c1", "c2")
				rows := read("r", 10)
				rows = rows[len(rows)-2:]
				require.Equal(t, []string{"c1", "c2"}, keys(rows))
				require.NoError(t, d.refused(ctx, "r", refusal{record: rows[0].Position, attempts: 1, nextAt: 77, lastError: "no"}))
				require.NoError(t, d.refused(ctx, "r", refusal{record: rows[1].Position, attempts: 3, nextAt: 78, lastError: "never", parked: true}))
				// A record read carries the sink's refusals of it, none once parked.
				again := read("r", 10)
				again = again[len(again)-2:]
				require.Equal(t, []string{"c1", "c2"}, keys(again))
				require.Equal(t, 1, again[0].RetryAttempts)
				require.EqualValues(t, 77, again[0].RetryNextAt)
				require.Zero(t, again[1].RetryAttempts, "parked")
				require.Zero(t, read("other", 10)[0].RetryAttempts, "refusals are per sink")
				mine, err := d.streamRecords(ctx, "r", "s-c", position{}, 10)
				require.NoError(t, err)
				require.Equal(t, []string{"c1", "c2"}, keys(mine))
				require.Equal(t, 1, mine[0].RetryAttempts)
				n, err := d.waiting(ctx, "r")
				require.NoError(t, err)
				require.Equal(t, 1, n)
				parked, err := d.parked(ctx, "")
				require.NoError(t, err)
				require.Len(t, parked, 1)
				require.Equal(t, "c2", parked[0].Key)
				require.Equal(t, "r", parked[0].Sink)
				require.Equal(t, 3, parked[0].Attempts)
				require.Equal(t, "never", parked[0].LastError)
				require.NoError(t, d.delivered(ctx, "r", rows[0].Position))
				n, err = d.waiting(ctx, "r")
				require.NoError(t, err)
				require.Zero(t, n)
			})

			t.Run("one stream's records and settling them", func(t *testing.T) {
				write(db, "e1", "f1", "e2", "e3")
				visible("e1", "f1", "e2", "e3")
				e, err := d.streamRecords(ctx, "st", "s-e", position{}, 10)
				require.NoError(t, err)
				require.Equal(t, []string{"e1", "e2", "e3"}, keys(e))
				after, err := d.streamRecords(ctx, "st", "s-e", e[0].at(), 1)
				require.NoError(t, err)
				require.Equal(t, []string{"e2"}, keys(after), "after a position, limited")
				require.NoError(t, d.refused(ctx, "st", refusal{record: e[1].Position, attempts: 2, nextAt: 9, lastError: "no"}))
				// One call settles several streams, two records of one among
				// them, and clears a refusal.
				f, err := d.streamRecords(ctx, "st", "s-f", position{}, 10)
				require.NoError(t, err)
				require.NoError(t, d.settle(ctx, "st", []settled{
					{stream: "s-e", at: e[1].at(), cleared: true},
					{stream: "s-f", at: f[0].at()},
					{stream: "s-e", at: e[0].at()},
				}))
				left, err := d.streamRecords(ctx, "st", "s-e", position{}, 10)
				require.NoError(t, err)
				require.Equal(t, []string{"e3"}, keys(left), "the stream's checkpoint passes what was settled")
				n, err := d.waiting(ctx, "st")
				require.NoError(t, err)
				require.Zero(t, n, "the refusal is cleared")
				require.NoError(t, d.settle(ctx, "st", []settled{{stream: "s-e", at: e[0].at()}}))
				left, err = d.streamRecords(ctx, "st", "s-e", position{}, 10)
				require.NoError(t, err)
				require.Equal(t, []string{"e3"}, keys(left), "a stream's checkpoint never moves back")
			})

			t.Run("a record that commits late is not skipped", func(t *testing.T) {
				other, err := sqldb.Open(ctx, dsn) // a second process
				require.NoError(t, err)
				t.Cleanup(func() { _ = other.Close() })
				require.NoError(t, d.advance(ctx, "h", "", position{}))
				// The late transaction takes the lower id first.
				late, err := db.BeginTxx(ctx, nil)
				require.NoError(t, err)
				defer func() { _ = late.Rollback() }()
				require.NoError(t, d.write(ctx, late, Record{Key: "l-late", Stream: "l", Type: "t", Body: []byte("late")}, 5))
				if writersOverlap {
					write(other, "m-early") // commits first, with a higher id
					// and so does a later record of the late one's stream
					require.NoError(t, d.write(ctx, other, Record{Key: "l-early", Stream: "l", Type: "t", Body: []byte("early")}, 5))
				}
				// Read while the late transaction is open, then move the
				// checkpoints past all that was read, as a relay would.
				seen := read("h", 100)
				mine, err := d.streamRecords(ctx, "h", "l", position{}, 100)
				require.NoError(t, err)
				require.NoError(t, late.Commit())
				for _, r := range seen {
					require.NotEqual(t, "l-late", r.Key)
					require.NoError(t, d.advance(ctx, "h", "", position{r.Tx, r.Position}))
				}
				for _, r := range mine {
					require.NoError(t, d.advance(ctx, "h", r.Stream, r.at()))
				}
				if !writersOverlap {
					write(other, "m-early")
				}
				// Eventually: the horizon is the oldest transaction running on
				// the whole server, which other tests' may hold back.
				require.Eventually(t, func() bool { return slices.Contains(keys(read("h", 100)), "l-late") }, 10*time.Second, 10*time.Millisecond,
					"the record that committed late was skipped")
				mine, err = d.streamRecords(ctx, "h", "l", position{}, 100)
				require.NoError(t, err)
				require.Contains(t, keys(mine), "l-late", "the record that committed late was skipped by its stream's read")
			})
		})
	}
}
