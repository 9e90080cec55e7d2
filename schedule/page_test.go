package schedule_test

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

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

// ReadPage filters, sorts and cuts on the server what ReadSchedules,
// ReadRuns and the schedules' to-do items say one by one (the oracle),
// page after page.
func TestReadPageAgreesWithReadingScheduleBySchedule(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			rec := &recorder{fail: func(r schedule.Run) error {
				if strings.HasPrefix(r.Schedule, "Broken") {
					return errors.New("the printer is on fire")
				}
				return nil
			}}
			n := newNode(t, db.DB, clock, rec)
			var defs []schedule.Definition
			for i := range 23 {
				name := fmt.Sprintf("job-%02d", i)
				switch i % 5 {
				case 1:
					name = fmt.Sprintf("Broken_%02d", i)
				case 2:
					name = fmt.Sprintf("paused%%%02d", i)
				case 3:
					// A letter only Unicode's mapping lowers: SQLite's own
					// lower() folds ASCII alone.
					name = fmt.Sprintf("job-Équipe-%02d", i)
				}
				every := time.Duration(10+i) * time.Minute
				defs = append(defs, schedule.Definition{Name: name, Spec: mustSpec(t)(schedule.Every(every, start)), Command: "c"})
			}
			_, err := n.s.Sync(ctx, defs...)
			require.NoError(t, err)
			for _, d := range defs {
				if strings.HasPrefix(d.Name, "paused") {
					require.NoError(t, n.s.Pause(ctx, d.Name))
				}
			}
			for range 6 {
				clock.Advance(10 * time.Minute)
				n.process(t, clock)
			}
			_, err = n.s.Trigger(ctx, "job-00")
			require.NoError(t, err)
			// Later, nothing processed: every schedule not paused is overdue
			// by up to 30 minutes.
			clock.Advance(30 * time.Minute)

			stored, err := schedule.ReadSchedules(ctx, db)
			require.NoError(t, err)
			items, err := todolist.Open(ctx, db.DB, "passage-schedules")
			require.NoError(t, err)
			type want struct {
				s        schedule.Stored
				attempts int
				lastErr  string
			}
			var all []want
			for _, s := range stored {
				w := want{s: s}
				if it, err := items.Get(ctx, s.Name); err == nil {
					w.attempts, w.lastErr = it.Attempts, it.LastError
				}
				all = append(all, w)
			}
			grace := 5 * time.Minute
			keep := map[schedule.PageFilter]func(w want) bool{
				schedule.AllSchedules: func(want) bool { return true },
				schedule.Overdue: func(w want) bool {
					return !w.s.Paused && !w.s.Next.IsZero() && w.s.Next.Add(w.s.Jitter).Before(clock.Now().Add(-grace))
				},
				schedule.Failing:    func(w want) bool { return w.attempts > 0 },
				schedule.PausedOnly: func(w want) bool { return w.s.Paused },
			}
			orders := map[schedule.PageSort]func(a, b want) int{
				schedule.ByName: func(a, b want) int { return strings.Compare(a.s.Name, b.s.Name) },
				schedule.ByNext: func(a, b want) int {
					return cmp.Or(cmp.Compare(boolInt(a.s.Next.IsZero()), boolInt(b.s.Next.IsZero())), a.s.Next.Compare(b.s.Next), strings.Compare(a.s.Name, b.s.Name))
				},
				schedule.ByAttempts: func(a, b want) int {
					return cmp.Or(cmp.Compare(b.attempts, a.attempts), strings.Compare(a.s.Name, b.s.Name))
				},
				schedule.ByRuns: func(a, b want) int {
					return cmp.Or(cmp.Compare(b.s.Runs, a.s.Runs), strings.Compare(a.s.Name, b.s.Name))
				},
			}
			for filter, kept := range keep {
				for sort, order := range orders {
					for _, match := range []string{"", "BROKEN", "%", "_0", "s%0", "é", "ÉQUIPE"} {
						var wants []want
						for _, w := range all {
							if kept(w) && strings.Contains(strings.ToLower(w.s.Name), strings.ToLower(match)) {
								wants = append(wants, w)
							}
						}
						slices.SortStableFunc(wants, order)
						for offset := 0; offset < max(len(wants), 1); offset += 4 {
							what := fmt.Sprintf("filter %q sort %s match %q offset %d", filter, sort, match, offset)
							page, err := schedule.ReadPage(ctx, db, schedule.PageQuery{Match: match, Filter: filter, Sort: sort,
								Offset: offset, Limit: 4, Runs: 3, Now: clock.Now(), Grace: grace})
							require.NoError(t, err, what)
							require.Equal(t, len(wants), page.Total, what)
							end := min(offset+4, len(wants))
							require.Len(t, page.Rows, end-offset, what)
							for i, row := range page.Rows {
								w := wants[offset+i]
								require.Equal(t, w.s.Name, row.Name, what)
								require.True(t, w.s.Next.Equal(row.Next), what)
								require.Equal(t, w.s.Zone.String(), row.Zone.String())
								require.Equal(t, w.s.Runs, row.Runs)
								require.Equal(t, w.s.Paused, row.Paused)
								require.Equal(t, w.s.Open, row.Open)
								require.Equal(t, w.attempts, row.Attempts, what)
								require.Equal(t, w.lastErr, row.LastError)
								runs, err := schedule.ReadRuns(ctx, db, row.Name, 3)
								require.NoError(t, err)
								require.Len(t, row.Last, len(runs), "%s: %s", what, row.Name)
								for j := range runs {
									require.Equal(t, runs[j].RunID, row.Last[j].RunID)
									require.True(t, runs[j].Slot.Equal(row.Last[j].Slot))
									require.True(t, runs[j].FiredAt.Equal(row.Last[j].FiredAt))
									require.Equal(t, runs[j].Manual, row.Last[j].Manual)
								}
							}
						}
					}
				}
			}
			// The broken ones failed and say why; none is empty.
			page, err := schedule.ReadPage(ctx, db, schedule.PageQuery{Filter: schedule.Failing, Limit: 100, Now: clock.Now()})
			require.NoError(t, err)
			require.NotEmpty(t, page.Rows)
			for _, r := range page.Rows {
				require.True(t, strings.HasPrefix(r.Name, "Broken"), r.Name)
				require.Contains(t, r.LastError, "the printer is on fire")
			}
			// ReadOverdue: the overdue page's total, and its first due instant.
			count, oldest, err := schedule.ReadOverdue(ctx, db, clock.Now(), grace)
			require.NoError(t, err)
			first, err := schedule.ReadPage(ctx, db, schedule.PageQuery{Filter: schedule.Overdue, Sort: schedule.ByNext, Limit: 1, Now: clock.Now(), Grace: grace})
			require.NoError(t, err)
			require.Positive(t, count)
			require.Equal(t, first.Total, count)
			require.True(t, first.Rows[0].Next.Add(first.Rows[0].Jitter).Equal(oldest), "%s, want %s", oldest, first.Rows[0].Next)
			count, oldest, err = schedule.ReadOverdue(ctx, db, start, grace)
			require.NoError(t, err)
			require.Zero(t, count)
			require.True(t, oldest.IsZero())

			// One schedule by name, with more runs than a page shows.
			one, err := schedule.ReadPage(ctx, db, schedule.PageQuery{Name: "job-00", Limit: 1, Runs: 100, Now: clock.Now()})
			require.NoError(t, err)
			require.Len(t, one.Rows, 1)
			runs, err := schedule.ReadRuns(ctx, db, "job-00", 100)
			require.NoError(t, err)
			require.Greater(t, len(runs), 3)
			require.Len(t, one.Rows[0].Last, len(runs))
			for i := range runs {
				require.Equal(t, runs[i].RunID, one.Rows[0].Last[i].RunID)
			}
			_, err = schedule.ReadPage(ctx, db, schedule.PageQuery{Sort: "sideways", Limit: 1})
			require.ErrorIs(t, err, schedule.ErrInvalidPageQuery)
			_, err = schedule.ReadPage(ctx, db, schedule.PageQuery{Limit: 0})
			require.ErrorIs(t, err, schedule.ErrInvalidPageQuery)
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
