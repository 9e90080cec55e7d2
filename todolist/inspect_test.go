package todolist_test

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
	"github.com/passage-of-time/passage/todolist"
)

// added is an item as the test added it: what a brute-force listing
// of the list is computed from.
type added struct {
	id  string
	due time.Time
}

// byDueThenID is the order ReadItems pages unclaimed, never-failed items
// in: by due time (their NextAttempt), then ID.
func byDueThenID(a, b added) int {
	return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.id, b.id))
}

// readAll pages through a list's items, limit a page, passing each
// page's cursor through its text form as a URL would, and fails on a
// page that repeats an item or breaks the order.
func readAll(t *testing.T, q sqlx.ExtContext, list string, parked bool, limit int, now time.Time) []todolist.Item {
	t.Helper()
	ctx := context.Background()
	var all []todolist.Item
	var after todolist.Cursor
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10_000, "paging does not end")
		page, err := todolist.ReadItems(ctx, q, list, parked, after, limit, now)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), limit)
		all = append(all, page.Items...)
		if page.Next.IsZero() {
			return all
		}
		require.Len(t, page.Items, limit, "only the last page is short")
		after, err = todolist.ParseCursor(page.Next.String())
		require.NoError(t, err)
		require.Equal(t, page.Next.ID, after.ID)
		require.True(t, page.Next.At.Equal(after.At))
	}
}

func TestReadItemsPagesEveryItemOnceInOrder(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		other := openList(t, db, "invoices", todolist.WithListClock(clock))
		// 61 items on 9 due times, so that ties straddle pages of 7;
		// IDs with dots, slashes and non-ASCII, which the cursor carries.
		var want []added
		for i := range 61 {
			it := added{id: fmt.Sprintf("ord.%02d/é-%d", (i*37)%61, i%3), due: t0.Add(time.Duration(i%9-4) * time.Minute)}
			want = append(want, it)
			require.NoError(t, l.Add(ctx, it.id, it.due))
			require.NoError(t, other.Add(ctx, it.id, it.due.Add(-time.Second)))
		}
		slices.SortFunc(want, byDueThenID)

		for _, limit := range []int{1, 7, 61, 62, todolist.MaxPageSize} {
			got := readAll(t, db, "orders", false, limit, clock.Now())
			require.Len(t, got, len(want), "limit %d", limit)
			for i, it := range got {
				require.Equal(t, todolist.Item{ID: want[i].id, Due: want[i].due, NextAttempt: want[i].due}, it, "limit %d, item %d", limit, i)
			}
		}
		parked, err := todolist.ReadItems(ctx, db, "orders", true, todolist.Cursor{}, 10, clock.Now())
		require.NoError(t, err)
		require.Empty(t, parked.Items)
		require.True(t, parked.Next.IsZero())
		none, err := todolist.ReadItems(ctx, db, "nobody", false, todolist.Cursor{}, 10, clock.Now())
		require.NoError(t, err)
		require.Empty(t, none.Items)
	})
}

// Failed items page by their next attempt, parked ones by due time; both
// against a sort of what the list's own API reports.
func TestReadItemsPagesFailedAndParkedItems(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		var all []string
		add := func(id string, due time.Time) {
			require.NoError(t, l.Add(ctx, id, due))
			all = append(all, id)
		}
		for i := range 30 {
			add(fmt.Sprintf("due-%02d", i), t0.Add(-time.Duration(i%4)*time.Minute))
			add(fmt.Sprintf("later-%02d", i), t0.Add(time.Duration(i%5+2)*time.Hour))
		}
		p := newProcessor(t, l, clock, fail, todolist.WithMaxAttempts(2), todolist.WithBackoff(time.Minute, 10*time.Minute))
		_, err := p.Process(ctx, t0) // due-*: the first failure, backing off
		require.NoError(t, err)
		for i := range 30 {
			add(fmt.Sprintf("retry-%02d", i), t0.Add(30*time.Minute-time.Duration(i%3)*time.Second))
		}
		clock.Advance(time.Hour)
		_, err = p.Process(ctx, clock.Now()) // due-* parked, retry-* backing off
		require.NoError(t, err)

		var pending, parked []todolist.Item
		for _, id := range all {
			it, err := l.Get(ctx, id)
			require.NoError(t, err)
			if it.Parked {
				parked = append(parked, it)
			} else {
				pending = append(pending, it)
			}
		}
		require.Len(t, parked, 30)
		slices.SortFunc(pending, func(a, b todolist.Item) int {
			return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), cmp.Compare(a.ID, b.ID))
		})
		slices.SortFunc(parked, func(a, b todolist.Item) int { return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.ID, b.ID)) })

		require.Equal(t, pending, readAll(t, db, "orders", false, 4, clock.Now()))
		gotParked := readAll(t, db, "orders", true, 4, clock.Now())
		require.Equal(t, parked, gotParked)
		for _, it := range gotParked {
			require.Equal(t, errFailed.Error(), it.LastError)
		}
	})
}

// A claimed item reads as claimed, until its lease, on both backends:
// PostgreSQL keeps its claims out of the item rows.
func TestReadItemsShowsClaims(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		for i := range 5 {
			require.NoError(t, l.Add(ctx, fmt.Sprintf("now-%d", i), t0.Add(-time.Duration(i)*time.Second)))
			require.NoError(t, l.Add(ctx, fmt.Sprintf("later-%d", i), t0.Add(time.Hour)))
		}
		working, release := make(chan struct{}), make(chan struct{})
		p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			if it.ID == "now-4" { // the earliest, worked first
				close(working)
				<-release
			}
			return nil
		}, todolist.WithLease(10*time.Minute))
		done := make(chan error, 1)
		go func() {
			_, err := p.Process(ctx, t0)
			done <- err
		}()
		<-working

		got := readAll(t, db, "orders", false, 3, clock.Now())
		require.Len(t, got, 10)
		claimed := 0
		for _, it := range got {
			want, err := l.Get(ctx, it.ID)
			require.NoError(t, err)
			require.Equal(t, want, it, "ReadItems reads %s as Get does", it.ID)
			if it.Claimed {
				claimed++
				require.Equal(t, t0.Add(10*time.Minute), it.NextAttempt, "a claimed item's next attempt is its lease's end")
			}
		}
		require.Equal(t, 5, claimed, "the batch of the five due items is held: %+v", got)
		// Judged at the lease's end, the claims have lapsed.
		for _, it := range readAll(t, db, "orders", false, 3, t0.Add(10*time.Minute)) {
			require.False(t, it.Claimed, it.ID)
		}

		close(release)
		require.NoError(t, <-done)
		left := readAll(t, db, "orders", false, 3, clock.Now())
		require.Len(t, left, 5)
		for _, it := range left {
			require.False(t, it.Claimed, it.ID)
		}
	})
}

func TestReadStatsCountAsTheListsDo(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		a := openList(t, db, "a", todolist.WithListClock(clock))
		b := openList(t, db, "b", todolist.WithListClock(clock))
		openList(t, db, "never-used", todolist.WithListClock(clock))
		for i := range 12 {
			require.NoError(t, a.Add(ctx, fmt.Sprintf("a%d", i), t0.Add(time.Duration(i-6)*time.Minute)))
		}
		for i := range 4 {
			require.NoError(t, b.Add(ctx, fmt.Sprintf("b%d", i), t0.Add(-time.Duration(i)*time.Hour)))
		}
		// b: one done, one parked, two fail and back off.
		n := 0
		pb := newProcessor(t, b, clock, func(_ context.Context, it todolist.Item) error {
			n++
			if it.ID == "b3" {
				return nil
			}
			return errFailed
		}, todolist.WithMaxAttempts(1), todolist.WithBatchSize(2))
		_, err := pb.Process(ctx, t0.Add(-90*time.Minute)) // b3 and b2 are due
		require.NoError(t, err)
		require.Equal(t, 2, n)

		now := clock.Now()
		want := map[string]todolist.Stats{}
		for _, l := range []*todolist.List{a, b} {
			s, err := l.Stats(ctx, now)
			require.NoError(t, err)
			want[l.Name()] = s
		}
		// Brute force, from what was added and done.
		require.Equal(t, todolist.Stats{Pending: 12, Due: 7, OldestDue: t0.Add(-6 * time.Minute)}, want["a"])
		require.Equal(t, todolist.Stats{Pending: 2, Due: 2, Parked: 1, OldestDue: t0.Add(-time.Hour), Completed: 1, Failures: 1, Parkings: 1}, want["b"])

		all, err := todolist.ReadStats(ctx, db, now)
		require.NoError(t, err)
		require.Equal(t, []todolist.ListStats{{Name: "a", Stats: want["a"]}, {Name: "b", Stats: want["b"]}}, all)
		for name, s := range want {
			got, ok, err := todolist.ReadListStats(ctx, db, name, now)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, todolist.ListStats{Name: name, Stats: s}, got)
		}
		_, ok, err := todolist.ReadListStats(ctx, db, "never-used", now)
		require.NoError(t, err)
		require.False(t, ok, "a list without items or totals does not exist")

		// b's items all done: the list still exists through its totals.
		require.NoError(t, b.Remove(ctx, "b0"))
		require.NoError(t, b.Remove(ctx, "b1"))
		require.NoError(t, b.Remove(ctx, "b2"))
		got, ok, err := todolist.ReadListStats(ctx, db, "b", now)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, todolist.Stats{Completed: 1, Failures: 1, Parkings: 1}, got.Stats)
	})
}

func TestReadDueCountsBucketsAsABruteForceCount(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		other := openList(t, db, "other", todolist.WithListClock(clock))
		var dues []time.Time
		for i := range 200 {
			due := t0.Add(time.Duration(i*i%1500-100) * time.Minute)
			dues = append(dues, due)
			require.NoError(t, l.Add(ctx, fmt.Sprintf("i%03d", i), due))
			require.NoError(t, other.Add(ctx, fmt.Sprintf("i%03d", i), t0))
		}
		const step, n = time.Hour, 24
		// The edges: the first instant counted, the last, and just outside.
		for i, due := range []time.Time{t0, t0.Add(-1), t0.Add(step*n - 1), t0.Add(step * n), t0.Add(step - 1), t0.Add(step)} {
			dues = append(dues, due)
			require.NoError(t, l.Add(ctx, fmt.Sprintf("edge-%d", i), due))
		}
		want := make([]int, n)
		for _, due := range dues {
			if d := due.Sub(t0); d >= 0 && d < step*n {
				want[d/step]++
			}
		}
		got, err := todolist.ReadDueCounts(ctx, db, "orders", t0, step, n)
		require.NoError(t, err)
		require.Equal(t, want, got)

		_, err = todolist.ReadDueCounts(ctx, db, "orders", t0, 0, n)
		require.ErrorIs(t, err, todolist.ErrInvalidLimit)
		_, err = todolist.ReadDueCounts(ctx, db, "orders", t0, step, todolist.MaxDueBuckets+1)
		require.ErrorIs(t, err, todolist.ErrInvalidLimit)
	})
}

func TestInspectionCreatesNothingOnAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		stats, err := todolist.ReadStats(ctx, db, t0)
		require.NoError(t, err)
		require.Empty(t, stats)
		ls, ok, err := todolist.ReadListStats(ctx, db, "orders", t0)
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, todolist.ListStats{Name: "orders"}, ls)
		page, err := todolist.ReadItems(ctx, db, "orders", false, todolist.Cursor{}, 10, t0)
		require.NoError(t, err)
		require.Empty(t, page.Items)
		counts, err := todolist.ReadDueCounts(ctx, db, "orders", t0, time.Hour, 3)
		require.NoError(t, err)
		require.Equal(t, []int{0, 0, 0}, counts)

		tables, err := sqldb.Tables(ctx, db)
		require.NoError(t, err)
		require.Empty(t, tables, "reading created tables")
	})
}

func TestABadCursorIsAnErrorNamingIt(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"garbage", "12.!!", ".YQ", "x.YQ", "1.YQ=="} {
		_, err := todolist.ParseCursor(text)
		require.ErrorIs(t, err, todolist.ErrInvalidCursor, text)
		require.Contains(t, err.Error(), fmt.Sprintf("%q", text))
	}
	c, err := todolist.ParseCursor("")
	require.NoError(t, err)
	require.True(t, c.IsZero(), "the empty text is the start")
	for _, c := range []todolist.Cursor{{At: t0, ID: "a.b/c"}, {At: time.Unix(0, -5).UTC(), ID: ""}, {At: t0, ID: "é\x00"}} {
		back, err := todolist.ParseCursor(c.String())
		require.NoError(t, err)
		require.Equal(t, c.ID, back.ID)
		require.True(t, c.At.Equal(back.At))
	}
}

func TestReadItemsRejectsBadArguments(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		for _, limit := range []int{0, -1, todolist.MaxPageSize + 1} {
			_, err := todolist.ReadItems(ctx, db, "orders", false, todolist.Cursor{}, limit, t0)
			require.ErrorIs(t, err, todolist.ErrInvalidLimit, "limit %d", limit)
		}
		_, err := todolist.ReadItems(ctx, db, "", false, todolist.Cursor{}, 10, t0)
		require.Error(t, err)
	})
}

// HasState tells a database without to-do lists from one where a list was
// opened, even one left empty, and creates nothing to find out.
func TestHasStateSaysWhetherAListWasOpenedOnTheDatabase(t *testing.T) {
	t.Parallel()
	sqldbtest.CheckHasState(t, todolist.HasState, "tick_cursors", func(t *testing.T, db *sqldb.DB) *todolist.List {
		return openList(t, db, "orders")
	}, nil)
}
