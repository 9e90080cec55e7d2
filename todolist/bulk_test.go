package todolist_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// addOneByOne is the reference AddMany must match: Add for each item, in
// order.
func addOneByOne(t *testing.T, l *todolist.List, items []todolist.NewItem) {
	t.Helper()
	for _, it := range items {
		require.NoError(t, l.Add(context.Background(), it.ID, it.Due))
	}
}

// requireSameItems fails unless got and want hold the same items in the
// same state, compared by every field Get reports.
func requireSameItems(t *testing.T, got, want *todolist.List) {
	t.Helper()
	ctx := context.Background()
	all := func(l *todolist.List) []todolist.Item {
		items, err := l.Due(ctx, time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC), 100_000)
		require.NoError(t, err)
		parked, err := l.Parked(ctx, 100_000)
		require.NoError(t, err)
		items = append(items, parked...)
		slices.SortFunc(items, func(a, b todolist.Item) int {
			if a.ID < b.ID {
				return -1
			}
			if a.ID > b.ID {
				return 1
			}
			return 0
		})
		return items
	}
	require.Equal(t, all(want), all(got))
}

// TestAddManyIsAddForEachItem compares AddMany with one Add per item on a
// second list of the same database that starts in the same state: new
// items, later, earlier and equal due times for items already there
// (among them a failed and a parked one), and IDs given several times in
// one call, across chunk boundaries.
func TestAddManyIsAddForEachItem(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		bulk, reference := openList(t, db, "bulk"), openList(t, db, "reference")
		todolist.SetAddManyChunk(bulk, 2)
		clock := clockwork.NewFakeClockAt(t0)
		for _, l := range []*todolist.List{bulk, reference} {
			addItems(t, l, t0.Add(time.Hour), "earlier", "later", "same", "twice-old")
			addItems(t, l, t0.Add(-time.Minute), "parked")
			addItems(t, l, t0, "failed")
			_, err := newProcessor(t, l, clock, fail, todolist.WithMaxAttempts(1)).Process(ctx, t0.Add(-time.Minute))
			require.NoError(t, err)
			_, err = newProcessor(t, l, clock, fail).Process(ctx, t0)
			require.NoError(t, err)
		}
		failed, err := bulk.Get(ctx, "failed")
		require.NoError(t, err)
		require.Equal(t, 1, failed.Attempts, "the fixture has a failed item")
		parked, err := bulk.Get(ctx, "parked")
		require.NoError(t, err)
		require.True(t, parked.Parked, "the fixture has a parked item")

		warsaw, err := time.LoadLocation("Europe/Warsaw")
		require.NoError(t, err)
		items := []todolist.NewItem{
			{ID: "new", Due: t0.Add(2 * time.Hour)},
			{ID: "earlier", Due: t0},
			{ID: "later", Due: t0.Add(3 * time.Hour)},
			{ID: "same", Due: t0.Add(time.Hour)},
			{ID: "failed", Due: t0.Add(5 * time.Hour)},
			{ID: "parked", Due: t0.Add(-time.Hour)},
			{ID: "twice", Due: t0.Add(2 * time.Hour)},
			{ID: "twice", Due: t0.Add(4 * time.Hour)},
			{ID: "twice", Due: t0.Add(3 * time.Hour)},
			{ID: "twice-old", Due: t0.Add(30 * time.Minute)},
			{ID: "twice-old", Due: t0.Add(90 * time.Minute)},
			{ID: "zoned", Due: t0.In(warsaw)},
		}
		require.NoError(t, bulk.AddMany(ctx, items))
		addOneByOne(t, reference, items)
		requireSameItems(t, bulk, reference)

		got, err := bulk.Get(ctx, "twice")
		require.NoError(t, err)
		require.Equal(t, t0.Add(4*time.Hour), got.Due, "an ID given several times is due at the latest")
		got, err = bulk.Get(ctx, "failed")
		require.NoError(t, err)
		require.Zero(t, got.Attempts, "a later due time makes the item new work")
		got, err = bulk.Get(ctx, "parked")
		require.NoError(t, err)
		require.True(t, got.Parked, "an earlier due time changes nothing")
	})
}

// TestAddManyMatchesAddOnRandomBatches throws random batches — IDs from a
// small pool, so most calls meet items already there and repeat IDs —
// at AddMany and at one Add per item, with small and default chunks.
func TestAddManyMatchesAddOnRandomBatches(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		for _, chunk := range []int{7, 0} {
			bulk, reference := openList(t, db, fmt.Sprintf("bulk-%d", chunk)), openList(t, db, fmt.Sprintf("reference-%d", chunk))
			todolist.SetAddManyChunk(bulk, chunk)
			r := rand.New(rand.NewPCG(1, uint64(chunk)))
			for range 3 {
				items := make([]todolist.NewItem, 1+r.IntN(400))
				for i := range items {
					items[i] = todolist.NewItem{
						ID:  fmt.Sprintf("order-%d", r.IntN(300)),
						Due: t0.Add(time.Duration(r.IntN(100)) * time.Minute),
					}
				}
				require.NoError(t, bulk.AddMany(ctx, items))
				addOneByOne(t, reference, items)
				requireSameItems(t, bulk, reference)
			}
		}
	})
}

func TestAddManyChecksEveryItemBeforeWriting(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	l := openList(t, db, "orders")

	err := l.AddMany(ctx, []todolist.NewItem{{ID: "a", Due: t0}, {ID: "b", Due: t0}, {ID: "", Due: t0}})
	require.ErrorIs(t, err, todolist.ErrInvalidID)
	require.ErrorContains(t, err, "item 2")
	err = l.AddMany(ctx, []todolist.NewItem{{ID: "a", Due: t0}, {ID: "b\x00", Due: t0}})
	require.ErrorIs(t, err, todolist.ErrInvalidID)
	require.ErrorContains(t, err, `item 1: todolist: invalid item id: "b\x00"`)
	err = l.AddMany(ctx, []todolist.NewItem{{ID: "a", Due: t0}, {ID: "b", Due: time.Time{}}})
	require.ErrorIs(t, err, todolist.ErrInvalidTime)
	require.ErrorContains(t, err, `item 1 ("b")`)
	err = l.AddManyTx(ctx, db, []todolist.NewItem{{ID: "a", Due: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}})
	require.ErrorIs(t, err, todolist.ErrInvalidTime)
	require.ErrorContains(t, err, `item 0 ("a")`)
	_, err = l.Get(ctx, "a")
	require.ErrorIs(t, err, todolist.ErrNotFound, "nothing of a call with a bad item is written")

	require.ErrorIs(t, l.AddManyTx(ctx, nil, nil), todolist.ErrInvalidArgument)
	require.NoError(t, l.AddMany(ctx, nil), "no items, nothing to do")
}

// TestAddManyTxCommitsAndRollsBackWithTheTransaction: the list changes
// with the caller's transaction, across chunks too.
func TestAddManyTxCommitsAndRollsBackWithTheTransaction(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		todolist.SetAddManyChunk(l, 2)
		addItems(t, l, t0, "kept")
		items := []todolist.NewItem{{ID: "a", Due: t0}, {ID: "b", Due: t0}, {ID: "c", Due: t0}, {ID: "kept", Due: t0.Add(time.Hour)}}

		tx, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, l.AddManyTx(ctx, tx, items))
		require.NoError(t, tx.Rollback())
		due, err := l.Due(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []todolist.Item{{ID: "kept", Due: t0, NextAttempt: t0}}, due, "a rolled-back transaction adds and moves nothing")

		tx, err = db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, l.AddManyTx(ctx, tx, items))
		require.NoError(t, tx.Commit())
		due, err = l.Due(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c", "kept"}, ids(due))
	})
}
