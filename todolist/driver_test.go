package todolist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// The driver conformance suite: the contract of both driver interfaces,
// listDriver and batchDriver, one test body run against every driver
// (sqldbtest.Backends). What is checked is what the logic relies on,
// observed through the list's own reads, so that a driver that claims out
// of order, past its bound, or writes an outcome it no longer holds fails
// here whichever database it serves.

// conformanceStart is when each conformance test's fake clock starts.
var conformanceStart = time.Date(2026, 3, 29, 10, 0, 0, 0, time.UTC)

// conformance is one driver under test, on a fresh list.
type conformance struct {
	t     *testing.T
	ctx   context.Context
	l     *List
	d     driver
	clock *clockwork.FakeClock
}

// eachDriver runs test against the driver of every backend.
func eachDriver(t *testing.T, test func(t *testing.T, c *conformance)) {
	t.Helper()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(conformanceStart)
			l, err := Open(context.Background(), db.DB, "conformance", WithListClock(clock))
			require.NoError(t, err)
			d := newDriver(db.DB)
			require.Equal(t, d, l.drv, "the list's driver is picked from the database")
			p, err := NewProcessor(l, func(context.Context, Item) error { return nil })
			require.NoError(t, err)
			require.Equal(t, d, p.drv, "the processor's driver is picked from the database")
			test(t, &conformance{t: t, ctx: context.Background(), l: l, d: d, clock: clock})
		})
	}
}

// at is the instant m minutes after the start.
func at(m int) time.Time { return conformanceStart.Add(time.Duration(m) * time.Minute) }

func enc(t time.Time) int64 { return sqldb.EncodeTime(t) }

// addDue adds items "i00", "i01", … with item i due at due(i).
func (c *conformance) addDue(n int, due func(i int) time.Time) {
	for i := range n {
		require.NoError(c.t, c.l.Add(c.ctx, fmt.Sprintf("i%02d", i), due(i)))
	}
}

// claim claims up to limit items ready at cutoff by the clock's now,
// under token, with a lease of a minute; it returns their IDs sorted.
func (c *conformance) claim(cutoff time.Time, limit int, token string) ([]claimed, []string) {
	now := c.clock.Now()
	batch, _, err := c.d.claim(c.ctx, c.l.db, c.ready(cutoff, limit), token, now.Add(time.Minute))
	require.NoError(c.t, err)
	for _, it := range batch {
		require.True(c.t, it.Claimed, "a claimed item reports its claim")
		require.Equal(c.t, now.Add(time.Minute), it.NextAttempt, "a claimed item's next attempt is its lease's end")
	}
	ids := idsOf(batch)
	slices.Sort(ids)
	return batch, ids
}

// ready is the items ready at cutoff by the clock's now, limit of them.
func (c *conformance) ready(cutoff time.Time, limit int) readyItems {
	return readyItems{list: c.l.name, cutoff: enc(cutoff), now: enc(c.clock.Now()), limit: limit}
}

// of is the claim of token on the list.
func (c *conformance) of(token string) claimRef { return claimRef{c.l.name, token} }

func (c *conformance) get(id string) Item {
	it, err := c.l.Get(c.ctx, id)
	require.NoError(c.t, err)
	return it
}

func (c *conformance) completed() int64 {
	s, err := c.l.Stats(c.ctx, c.clock.Now())
	require.NoError(c.t, err)
	return s.Completed
}

// The claim takes the earliest due items first, at most its bound, none
// due after the cutoff, and none another live claim holds; a lapsed claim
// holds nothing.
func TestDriverClaimsDueItemsInOrderWithinTheBound(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		// IDs run against due order, so an order by ID is caught too.
		c.addDue(10, func(i int) time.Time { return at(10 - i) })
		_, first := c.claim(at(8), 3, "first")
		require.Equal(t, []string{"i07", "i08", "i09"}, first, "the three earliest due, no more")
		_, second := c.claim(at(8), 3, "second")
		require.Equal(t, []string{"i04", "i05", "i06"}, second, "the next three, skipping the first claim's")
		_, rest := c.claim(at(8), 10, "third")
		require.Equal(t, []string{"i02", "i03"}, rest, "none due after the cutoff")
		require.True(t, c.get("i09").Claimed)
		page, err := ReadItems(c.ctx, c.l.db, c.l.name, false, Cursor{}, 10, c.clock.Now())
		require.NoError(t, err)
		var held []string
		for _, it := range page.Items {
			if it.Claimed {
				held = append(held, it.ID)
			}
		}
		slices.Sort(held)
		require.Equal(t, []string{"i02", "i03", "i04", "i05", "i06", "i07", "i08", "i09"}, held, "a page judges claims as get does (pageQuery)")

		rows, err := c.d.due(c.ctx, c.l.db, c.ready(at(20), 10))
		due, err := c.l.scan(c.clock.Now(), rows, err)
		require.NoError(t, err)
		require.Equal(t, []string{"i01", "i00"}, ids(due), "due skips claimed items, by run_at")
		backlog, err := c.d.backlog(c.ctx, c.l.db, c.ready(at(20), 0))
		require.NoError(t, err)
		require.Equal(t, 2, backlog)

		c.clock.Advance(time.Minute) // every lease ends
		require.False(t, c.get("i09").Claimed)
		_, again := c.claim(at(8), 2, "fourth")
		require.Equal(t, []string{"i08", "i09"}, again, "lapsed claims hold nothing")
	})
}

// settle deletes the done items still held and counts each completed once;
// after the lease ended it deletes nothing.
func TestDriverSettlesDoneItemsWhileTheLeaseHolds(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		c.addDue(4, func(int) time.Time { return at(0) })
		batch, _ := c.claim(at(0), 3, "batch")
		n, err := c.d.releaseUnstarted(c.ctx, c.l.db, c.of("batch"), batch[2:])
		require.NoError(t, err)
		require.Equal(t, 1, n)
		removed, held, err := c.d.settle(c.ctx, c.l.db, settlement{
			claimRef: c.of("batch"), done: rowsOf(batch[:2]), failures: 1, parkings: 1,
			holds: func() bool { return true }, now: c.clock.Now,
		})
		require.NoError(t, err)
		require.True(t, held)
		require.Equal(t, 2, removed)
		s, err := c.l.Stats(c.ctx, c.clock.Now())
		require.NoError(t, err)
		require.Equal(t, Stats{Pending: 2, Due: 2, OldestDue: at(0), Completed: 2, Failures: 1, Parkings: 1}, s)
		_, free := c.claim(at(0), 10, "next")
		require.Len(t, free, 2, "the settled and released batch holds nothing")

		// A lease that ended: the claim of "next" is past its end.
		c.clock.Advance(2 * time.Minute)
		lapsed, _ := c.claim(at(0), 10, "lapsed")
		c.clock.Advance(2 * time.Minute)
		removed, _, err = c.d.settle(c.ctx, c.l.db, settlement{
			claimRef: c.of("lapsed"), done: rowsOf(lapsed),
			holds: func() bool { return false }, now: c.clock.Now,
		})
		require.NoError(t, err)
		require.Zero(t, removed, "nothing is deleted once the lease ended")
		require.Equal(t, int64(2), c.completed())
	})
}

// fail records the attempt on an item the claim still holds, and the item
// leaves the claim at once; an item gone or re-added is not recorded.
func TestDriverRecordsFailuresAndParkings(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		c.addDue(3, func(int) time.Time { return at(0) })
		batch, _ := c.claim(at(0), 3, "batch")
		now := enc(c.clock.Now())
		retry := Item{ID: batch[0].ID, Attempts: 1, LastError: "boom", NextAttempt: at(5)}
		recorded, err := c.d.fail(c.ctx, c.l.db, c.of("batch"), batch[0], retry, now)
		require.NoError(t, err)
		require.True(t, recorded)
		got := c.get(batch[0].ID)
		require.Equal(t, Item{ID: batch[0].ID, Due: at(0), NextAttempt: at(5), Attempts: 1, LastError: "boom"}, got)

		park := Item{ID: batch[1].ID, Attempts: 7, LastError: "gave up", NextAttempt: at(9), Parked: true}
		recorded, err = c.d.fail(c.ctx, c.l.db, c.of("batch"), batch[1], park, now)
		require.NoError(t, err)
		require.True(t, recorded)
		parked, err := c.l.Parked(c.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []string{batch[1].ID}, ids(parked))

		require.NoError(t, c.l.Add(c.ctx, batch[2].ID, at(30))) // re-added: new work
		recorded, err = c.d.fail(c.ctx, c.l.db, c.of("batch"), batch[2], Item{ID: batch[2].ID, Attempts: 1, LastError: "late", NextAttempt: at(5)}, now)
		require.NoError(t, err)
		require.False(t, recorded, "a re-added item's failure belongs to the old due time")
		got = c.get(batch[2].ID)
		require.Zero(t, got.Attempts)
		require.Equal(t, at(30), got.Due)

		c.clock.Advance(5 * time.Minute)
		_, retried := c.claim(at(5), 10, "retry")
		require.Equal(t, []string{batch[0].ID}, retried, "retried at its backoff, parked never")
	})
}

// renew extends a live claim from now; a lapsed one stays lapsed.
func TestDriverRenewsLiveLeasesOnly(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		c.addDue(2, func(int) time.Time { return at(0) })
		batch, _ := c.claim(at(0), 1, "kept")
		c.clock.Advance(40 * time.Second)
		end, held, err := c.d.renew(c.ctx, c.l.db, renewal{c.of("kept"), batch, at(1), c.clock, time.Minute})
		require.NoError(t, err)
		require.True(t, held)
		require.Equal(t, c.clock.Now().Add(time.Minute), end)
		c.clock.Advance(40 * time.Second) // past the first lease, within the renewed one
		_, other := c.claim(at(0), 10, "other")
		require.Len(t, other, 1, "the renewed claim still holds its item")
		require.NotEqual(t, batch[0].ID, other[0])

		c.clock.Advance(2 * time.Minute)
		_, held, err = c.d.renew(c.ctx, c.l.db, renewal{c.of("kept"), batch, end, c.clock, time.Minute})
		require.NoError(t, err)
		require.False(t, held, "a lapsed lease is not renewed")
	})
}

// releaseConflicts sets the items to run at next: once their batch is
// settled they are free then, not before.
func TestDriverReleasesConflictsUntilNext(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		c.addDue(2, func(int) time.Time { return at(0) })
		batch, _ := c.claim(at(0), 2, "batch")
		next := enc(at(0)) + 1
		require.NoError(t, c.d.releaseConflicts(c.ctx, c.l.db, c.of("batch"), batch[:1], next, enc(c.clock.Now())))
		_, err := c.d.releaseUnstarted(c.ctx, c.l.db, c.of("batch"), batch[1:])
		require.NoError(t, err)
		_, held, err := c.d.settle(c.ctx, c.l.db, settlement{
			claimRef: c.of("batch"), holds: func() bool { return true }, now: c.clock.Now,
		})
		require.NoError(t, err)
		require.True(t, held)
		_, same := c.claim(at(0), 10, "same tick")
		require.Equal(t, []string{batch[1].ID}, same, "the conflict not before next")
		_, after := c.claim(sqldb.DecodeTime(next), 10, "next tick")
		require.Equal(t, []string{batch[0].ID}, after)
	})
}

// removeCompleted counts a removal completed once; removeMany counts
// nothing; addMany writes every chunk by Add's rules.
func TestDriverRemovesAndAddsMany(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		rows := manyRows{ids: []string{"a", "b", "c", "d", "e"}, dues: []int64{enc(at(1)), enc(at(2)), enc(at(3)), enc(at(4)), enc(at(5))}}
		_, err := c.d.addMany(c.ctx, c.l.db, c.l.name, rows, 2)
		require.NoError(t, err)
		due, err := c.l.Due(c.ctx, at(10), 10)
		require.NoError(t, err)
		require.Equal(t, rows.ids, ids(due))

		require.NoError(t, c.d.removeCompleted(c.ctx, c.l.db, c.l.name, "a"))
		require.NoError(t, c.d.removeCompleted(c.ctx, c.l.db, c.l.name, "a"))
		require.Equal(t, int64(1), c.completed(), "a removal counts once")
		require.NoError(t, c.d.removeCompletedMany(c.ctx, c.l.db, c.l.name, []string{"b", "c", "zz"}))
		require.Equal(t, int64(3), c.completed())
		require.NoError(t, c.d.removeMany(c.ctx, c.l.db, c.l.name, []string{"d", "e"}))
		require.Equal(t, int64(3), c.completed(), "a plain removal counts nothing")
		due, err = c.l.Due(c.ctx, at(10), 10)
		require.NoError(t, err)
		require.Empty(t, due)
	})
}

// addMany reports where it failed: the first item of the chunk that did.
func TestDriverAddManyReportsTheChunkThatFailed(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		rows := manyRows{ids: []string{"a", "b", "c", "d", "e"}, dues: []int64{1, 2, 3, 4, 5}}
		failing := &failSecondExec{ExtContext: c.l.db}
		failedAt, err := c.d.addMany(c.ctx, failing, c.l.name, rows, 2)
		require.ErrorIs(t, err, errSecondExec)
		require.Equal(t, 2, failedAt, "the second chunk, from its first item")
	})
}

var errSecondExec = errors.New("the second statement fails")

// failSecondExec runs statements on its ExtContext but fails the second.
type failSecondExec struct {
	sqlx.ExtContext
	execs int
}

func (f *failSecondExec) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if f.execs++; f.execs == 2 {
		return nil, errSecondExec
	}
	return f.ExtContext.ExecContext(ctx, query, args...)
}

// A transactional pick takes the earliest due items within its bound; the
// writes of its outcome touch only rows still as picked.
func TestDriverWritesTransactionalBatches(t *testing.T) {
	eachDriver(t, func(t *testing.T, c *conformance) {
		c.addDue(6, func(i int) time.Time { return at(6 - i) })
		tx, err := c.l.db.BeginTxx(c.ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		batch, err := c.d.pickTx(c.ctx, tx, c.ready(at(5), 4))
		require.NoError(t, err)
		sortBatch(batch)
		require.Equal(t, []string{"i05", "i04", "i03", "i02"}, idsOf(batch), "the four earliest due, earliest first")

		// i05 changes in the transaction without going through the list.
		_, err = tx.ExecContext(c.ctx, tx.Rebind(`UPDATE todolist_items SET due = due + 1 WHERE list = ? AND id = ?`), c.l.name, "i05")
		require.NoError(t, err)
		kept, err := c.d.unchangedTx(c.ctx, tx, c.l.name, batch[:2])
		require.NoError(t, err)
		removed, err := c.d.removeTx(c.ctx, tx, c.l.name, kept)
		require.NoError(t, err)
		require.Equal(t, 1, removed, "only the row still as picked")
		require.NoError(t, c.d.conflictTx(c.ctx, tx, c.l.name, batch[2:3], enc(at(7))))
		recorded, err := c.d.failTx(c.ctx, tx, c.l.name, batch[3], Item{ID: "i02", Attempts: 1, LastError: "boom", NextAttempt: at(9)})
		require.NoError(t, err)
		require.True(t, recorded)
		require.NoError(t, c.d.hold(c.ctx, tx, c.l.name, "i01"))
		require.NoError(t, tx.Commit())

		_, err = c.l.Get(c.ctx, "i04")
		require.ErrorIs(t, err, ErrNotFound)
		require.Equal(t, at(7), c.get("i03").NextAttempt)
		got := c.get("i02")
		require.Equal(t, 1, got.Attempts)
		require.Equal(t, at(9), got.NextAttempt)
		require.Equal(t, at(1).Add(1), c.get("i05").Due, "the changed row is kept")
	})
}

// rowsOf is batch as the done rows of a settlement.
func rowsOf(batch []claimed) doneRows {
	var d doneRows
	for _, c := range batch {
		d.add(c)
	}
	return d
}

// ids is the IDs of items, in order.
func ids(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}
