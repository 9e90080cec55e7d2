package todolist_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

func TestOpenValidatesTheName(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	for name, want := range map[string]string{
		"":                       "empty",
		strings.Repeat("x", 201): "201 bytes",
		"pending\norders":        "control character",
		"tab\there":              "control character",
		"nul\x00":                "control character",
		"\xffbad":                "not valid UTF-8",
		".":                      "cannot be carried in a URL path",
		"..":                     "cannot be carried in a URL path",
	} {
		_, err := todolist.Open(ctx, db.DB, name)
		require.ErrorIs(t, err, todolist.ErrInvalidName, "name %q", name)
		require.ErrorContains(t, err, want)
	}
	_, err := todolist.Open(ctx, nil, "orders")
	require.ErrorIs(t, err, todolist.ErrInvalidArgument)
	require.ErrorContains(t, err, "db must not be nil")
	_, err = todolist.Open(ctx, db.DB, "orders", todolist.WithListClock(nil))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
	_, err = todolist.AllStats(ctx, nil, t0)
	require.ErrorIs(t, err, todolist.ErrInvalidArgument)
	l := openList(t, db, "orders")
	require.ErrorIs(t, l.AddTx(ctx, nil, "a", t0), todolist.ErrInvalidArgument)
	require.ErrorIs(t, l.RemoveTx(ctx, nil, "a"), todolist.ErrInvalidArgument)
}

func TestNamesAreDataNotSQL(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		hostile := openList(t, db, `x'); DROP TABLE todolist_items; --`)
		plain := openList(t, db, "x")
		require.Equal(t, `x'); DROP TABLE todolist_items; --`, hostile.Name())
		addItems(t, hostile, t0, "a")
		addItems(t, plain, t0, "b")

		due, err := hostile.Due(ctx, t0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, ids(due), "each list sees only its own items")
		due, err = plain.Due(ctx, t0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, ids(due))
	})
}

func TestAddIsAnIdempotentUpsertThatOnlyMovesLater(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0.Add(time.Minute), "a")
		first, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, todolist.Item{ID: "a", Due: t0.Add(time.Minute), NextAttempt: t0.Add(time.Minute)}, first)

		addItems(t, l, t0.Add(time.Minute), "a")
		again, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, first, again, "adding the same item again changes nothing")

		addItems(t, l, t0, "a")
		earlier, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, first, earlier, "an earlier due time does not pull the item back")

		addItems(t, l, t0.Add(time.Hour), "a")
		later, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Hour), later.Due, "a later due time moves the item")

		// Times keep their instant whatever zone they come in.
		warsaw, err := time.LoadLocation("Europe/Warsaw")
		require.NoError(t, err)
		addItems(t, l, t0.In(warsaw), "b")
		b, err := l.Get(ctx, "b")
		require.NoError(t, err)
		require.True(t, b.Due.Equal(t0))
	})
}

func TestRemoveIsIdempotent(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "a")
		require.NoError(t, l.Remove(ctx, "a"))
		require.NoError(t, l.Remove(ctx, "a"))
		_, err := l.Get(ctx, "a")
		require.ErrorIs(t, err, todolist.ErrNotFound)
		require.ErrorContains(t, err, `"a"`)
	})
}

func TestBadInputIsRejected(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	l := openList(t, db, "orders")

	require.ErrorIs(t, l.Add(ctx, "", t0), todolist.ErrInvalidID)
	require.ErrorIs(t, l.Add(ctx, "a\x00", t0), todolist.ErrInvalidID)
	require.ErrorIs(t, l.Add(ctx, strings.Repeat("x", todolist.MaxIDLength+1), t0), todolist.ErrInvalidID)
	require.ErrorIs(t, l.Remove(ctx, ""), todolist.ErrInvalidID)

	err := l.Add(ctx, "a", time.Time{})
	require.ErrorIs(t, err, todolist.ErrInvalidTime)
	require.ErrorContains(t, err, "zero")
	err = l.Add(ctx, "a", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	require.ErrorIs(t, err, todolist.ErrInvalidTime)
	require.ErrorContains(t, err, "3000")

	_, err = l.Due(ctx, t0, 0)
	require.ErrorIs(t, err, todolist.ErrInvalidLimit)
	_, err = l.Due(ctx, time.Time{}, 10)
	require.ErrorIs(t, err, todolist.ErrInvalidTime)
	_, err = l.Parked(ctx, -1)
	require.ErrorIs(t, err, todolist.ErrInvalidLimit)
	_, err = l.Stats(ctx, time.Time{})
	require.ErrorIs(t, err, todolist.ErrInvalidTime)

	stats, err := l.Stats(ctx, t0)
	require.NoError(t, err)
	require.Equal(t, todolist.Stats{}, stats, "nothing bad was stored")
}

func TestWritesInARolledBackTransactionLeaveNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "kept")

		tx, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, l.AddTx(ctx, tx, "new", t0))
		require.NoError(t, l.RemoveTx(ctx, tx, "kept"))
		require.NoError(t, tx.Rollback())

		due, err := l.Due(ctx, t0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"kept"}, ids(due))

		tx, err = db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, l.AddTx(ctx, tx, "new", t0))
		require.NoError(t, l.RemoveTx(ctx, tx, "kept"))
		require.NoError(t, tx.Commit())

		due, err = l.Due(ctx, t0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"new"}, ids(due), "a committed transaction keeps both writes")
	})
}

func TestDueReturnsEarliestFirst(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0.Add(3*time.Minute), "c")
		addItems(t, l, t0.Add(time.Minute), "a2", "a1")
		addItems(t, l, t0.Add(2*time.Minute), "b")
		addItems(t, l, t0.Add(time.Hour), "later")

		due, err := l.Due(ctx, t0.Add(3*time.Minute), 10)
		require.NoError(t, err)
		require.Equal(t, []string{"a1", "a2", "b", "c"}, ids(due), "by due time, then ID; not-yet-due items left out")

		due, err = l.Due(ctx, t0.Add(3*time.Minute), 2)
		require.NoError(t, err)
		require.Equal(t, []string{"a1", "a2"}, ids(due))

		due, err = l.Due(ctx, t0, 10)
		require.NoError(t, err)
		require.Empty(t, due)
	})
}

func TestStatsCountEveryList(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		all, err := todolist.AllStats(ctx, db.DB, t0)
		require.NoError(t, err)
		require.Empty(t, all, "a fresh database has no lists")

		orders := openList(t, db, "orders")
		invoices := openList(t, db, "invoices")
		addItems(t, orders, t0.Add(-2*time.Minute), "old")
		addItems(t, orders, t0.Add(-time.Minute), "recent")
		addItems(t, orders, t0.Add(time.Minute), "future")
		addItems(t, orders, t0.Add(-time.Hour), "broken")
		addItems(t, invoices, t0.Add(time.Hour), "i1")

		clock := clockwork.NewFakeClockAt(t0)
		p := newProcessor(t, orders, clock, fail, todolist.WithMaxAttempts(1))
		_, err = p.Process(ctx, t0)
		require.NoError(t, err)

		stats, err := orders.Stats(ctx, t0)
		require.NoError(t, err)
		// Every attempt failed and one attempt is the limit: all due
		// items are parked.
		require.Equal(t, todolist.Stats{Pending: 1, Due: 0, Parked: 3, Failures: 3, Parkings: 3}, stats)

		require.NoError(t, orders.Reactivate(ctx, "old"))
		stats, err = orders.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 2, Due: 1, Parked: 2, OldestDue: t0.Add(-2 * time.Minute), Failures: 3, Parkings: 3}, stats,
			"re-activating leaves the totals alone")

		all, err = todolist.AllStats(ctx, db.DB, t0)
		require.NoError(t, err)
		require.Equal(t, []todolist.ListStats{
			{Name: "invoices", Stats: todolist.Stats{Pending: 1}},
			{Name: "orders", Stats: stats},
		}, all)
	})
}
