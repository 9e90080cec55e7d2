package todolist

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Inspection for dashboards that point at trouble: which lists have
// items failing, and how late their due items are. Read-only, like the
// rest of the inspection; the same statements on every database.

// ReadFailing counts, per list, the items whose action failed and that
// wait for their next attempt (attempts above zero, not parked); lists
// without such items are absent. It reads every item, as ReadStats does.
func ReadFailing(ctx context.Context, q sqldb.Queryer) (map[string]int, error) {
	out := map[string]int{}
	ok, err := hasTables(ctx, q)
	if err != nil || !ok {
		return out, wrapRead("read failing items", err)
	}
	rows, err := q.QueryContext(ctx, `SELECT list, COUNT(*) FROM todolist_items WHERE attempts > 0 AND parked = 0 GROUP BY list`)
	if err != nil {
		return out, wrapRead("read failing items", err)
	}
	defer rows.Close()
	for rows.Next() {
		var list string
		var n int
		if err := rows.Scan(&list, &n); err != nil {
			return out, wrapRead("read failing items", err)
		}
		out[list] = n
	}
	return out, wrapRead("read failing items", rows.Err())
}

// ReadLateness sorts the items of list that are due at now and not
// parked by how long they have been due: counts[i] holds those late by
// less than bounds[i] (and at least bounds[i-1]), the last count those
// late by bounds[len-1] or more, so there is one count more than bounds.
// bounds must be positive and increasing. One statement over the list's
// due items. Items done are deleted, so how late past actions were is
// not in the database: the metric passage.todolist.action.lateness
// holds it.
func ReadLateness(ctx context.Context, q sqldb.Queryer, list string, now time.Time, bounds []time.Duration) ([]int, error) {
	what := fmt.Sprintf("read lateness of %q", list)
	if err := validateName(list); err != nil {
		return nil, err
	}
	if err := validateTime("now", now); err != nil {
		return nil, wrapRead(what, err)
	}
	for i, b := range bounds {
		if b <= 0 || i > 0 && b <= bounds[i-1] {
			return nil, fmt.Errorf("todolist: %s: bounds %v must be positive and increasing", what, bounds)
		}
	}
	counts := make([]int, len(bounds)+1)
	ok, err := hasTables(ctx, q)
	if err != nil || !ok {
		return counts, wrapRead(what, err)
	}
	// Late by less than b is due after now-b.
	var cols []string
	var args []any
	for _, b := range bounds {
		cols = append(cols, `COALESCE(SUM(CASE WHEN due > ? THEN 1 ELSE 0 END), 0)`)
		args = append(args, sqldb.EncodeTime(now.Add(-b)))
	}
	cols = append(cols, `COUNT(*)`)
	args = append(args, list, sqldb.EncodeTime(now))
	dest := make([]any, len(counts))
	for i := range counts {
		dest[i] = &counts[i]
	}
	row := q.QueryRowxContext(ctx, q.Rebind(`SELECT `+strings.Join(cols, ", ")+` FROM todolist_items WHERE list = ? AND parked = 0 AND due <= ?`), args...)
	if err := row.Scan(dest...); err != nil {
		return nil, wrapRead(what, err)
	}
	// The sums are cumulative (late by less than b); the buckets are
	// their differences, the last one what is left of the total.
	total := counts[len(counts)-1]
	for i := len(bounds) - 1; i > 0; i-- {
		counts[i] -= counts[i-1]
	}
	counts[len(bounds)] = total
	for i := range bounds {
		counts[len(bounds)] -= counts[i]
	}
	return counts, nil
}
