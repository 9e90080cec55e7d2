package todolist_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// ReadListPage filters, sorts and cuts on the server what ReadListStats
// and Get say list by list and item by item (the oracle), page after
// page, for every filter, order and a few matches.
func TestReadListPageAgreesWithReadingListByList(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		ok := func(context.Context, todolist.Item) error { return nil }
		items := map[string][]string{}
		for i := range 17 {
			name := fmt.Sprintf("list-%02d", i)
			switch i % 4 {
			case 1:
				name = fmt.Sprintf("Orders_%02d", i)
			case 2:
				name = fmt.Sprintf("orders%%%02d", i)
			case 3:
				// A letter only Unicode's mapping lowers: SQLite's own
				// lower() folds ASCII alone.
				name = fmt.Sprintf("list-Équipe-%02d", i)
			}
			l := openList(t, db, name, todolist.WithListClock(clock))
			// Few distinct counts, so that orders tie and the name decides.
			for j := range i%3 + 2 {
				id := fmt.Sprintf("item-%d", j)
				due := t0.Add(-time.Duration(i*7+j) * time.Minute)
				if j%2 == 1 {
					due = t0.Add(time.Hour)
				}
				require.NoError(t, l.Add(ctx, id, due))
				items[name] = append(items[name], id)
			}
			var p *todolist.Processor
			switch i % 5 {
			case 1: // parks its due items
				p = newProcessor(t, l, clock, fail, todolist.WithMaxAttempts(1))
			case 2: // they fail and back off an hour
				p = newProcessor(t, l, clock, fail, todolist.WithMaxAttempts(3), todolist.WithBackoff(time.Hour, time.Hour))
			case 3: // completes them
				p = newProcessor(t, l, clock, ok)
			}
			if p != nil {
				_, err := p.Process(ctx, t0)
				require.NoError(t, err)
			}
		}
		clock.Advance(30 * time.Minute)
		now := clock.Now()

		// The oracle: each list's stats by itself, its failing items one by one.
		var all []todolist.ListPageRow
		for name, ids := range items {
			ls, found, err := todolist.ReadListStats(ctx, db, name, now)
			require.NoError(t, err)
			require.True(t, found, name)
			row := todolist.ListPageRow{ListStats: ls}
			l := openList(t, db, name, todolist.WithListClock(clock))
			for _, id := range ids {
				it, err := l.Get(ctx, id)
				if errors.Is(err, todolist.ErrNotFound) {
					continue // completed
				}
				require.NoError(t, err)
				if it.Attempts > 0 && !it.Parked {
					row.Failing++
				}
			}
			all = append(all, row)
		}
		grace := 20 * time.Minute
		filters := map[todolist.ListFilter]func(todolist.ListPageRow) bool{
			todolist.AllLists:    func(todolist.ListPageRow) bool { return true },
			todolist.WithParked:  func(r todolist.ListPageRow) bool { return r.Parked > 0 },
			todolist.WithFailing: func(r todolist.ListPageRow) bool { return r.Failing > 0 },
			todolist.Behind:      func(r todolist.ListPageRow) bool { return !r.OldestDue.IsZero() && now.Sub(r.OldestDue) > grace },
		}
		byName := func(a, b todolist.ListPageRow) int { return strings.Compare(a.Name, b.Name) }
		orders := map[todolist.ListSort]func(a, b todolist.ListPageRow) int{
			"":                   byName,
			todolist.ListsByName: byName,
			todolist.ByPending:   func(a, b todolist.ListPageRow) int { return cmp.Or(cmp.Compare(b.Pending, a.Pending), byName(a, b)) },
			todolist.ByParked:    func(a, b todolist.ListPageRow) int { return cmp.Or(cmp.Compare(b.Parked, a.Parked), byName(a, b)) },
			todolist.ByFailing:   func(a, b todolist.ListPageRow) int { return cmp.Or(cmp.Compare(b.Failing, a.Failing), byName(a, b)) },
			todolist.ByOldestDue: func(a, b todolist.ListPageRow) int {
				return cmp.Or(cmp.Compare(nothingDue(a), nothingDue(b)), a.OldestDue.Compare(b.OldestDue), byName(a, b))
			},
		}
		kinds := map[string]bool{}
		for filter, keep := range filters {
			for sort, order := range orders {
				for _, match := range []string{"", "ORDERS", "%", "_0", "nothing", "é", "ÉQUIPE"} {
					var want []todolist.ListPageRow
					for _, r := range all {
						if keep(r) && strings.Contains(strings.ToLower(r.Name), strings.ToLower(match)) {
							want = append(want, r)
						}
					}
					slices.SortFunc(want, order)
					if len(want) > 0 {
						kinds[string(filter)] = true
					}
					const limit = 3
					for offset := 0; ; offset += limit {
						name := fmt.Sprintf("filter %q sort %q match %q offset %d", filter, sort, match, offset)
						page, err := todolist.ReadListPage(ctx, db, todolist.ListPageQuery{Match: match, Filter: filter, Sort: sort,
							Offset: offset, Limit: limit, Now: now, Grace: grace})
						require.NoError(t, err, name)
						if offset >= len(want) {
							require.Empty(t, page.Rows, name)
							require.Zero(t, page.Total, name)
							break
						}
						require.Equal(t, want[offset:min(offset+limit, len(want))], page.Rows, name)
						require.Equal(t, len(want), page.Total, name)
					}
				}
			}
		}
		// Every filter kept some list: the seed holds each kind of trouble.
		require.Len(t, kinds, len(filters))

		for _, q := range []todolist.ListPageQuery{{Sort: "sideways", Limit: 1}, {Filter: "sideways", Limit: 1}, {Limit: 0}, {Limit: 1, Offset: -1}, {Limit: todolist.MaxListPageRows + 1}} {
			q.Now = now
			_, err := todolist.ReadListPage(ctx, db, q)
			require.ErrorIs(t, err, todolist.ErrInvalidListPage, "%+v", q)
		}
	})
}

// nothingDue ranks the lists with nothing due after the others.
func nothingDue(r todolist.ListPageRow) int {
	if r.OldestDue.IsZero() {
		return 1
	}
	return 0
}
