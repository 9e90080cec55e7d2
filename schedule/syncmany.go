package schedule

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// syncAll is Sync's work in tx, set-wise where it can be: an application
// declares the same thousands of schedules at every start, and a
// statement or two per schedule made each start of a large number of
// schedules wait for seconds on PostgreSQL. One statement a chunk reads
// the stored hashes: a schedule stored with the same hash is unchanged,
// and nothing of it is locked or written (as if this Sync came before any
// concurrent change). New schedules are inserted a chunk a statement,
// their items added in one call. Changed schedules, and new ones another
// process stored meanwhile, go through sync one by one, under their
// locks, in name order.
func (s *Scheduler) syncAll(ctx context.Context, tx *sqlx.Tx, defs []Definition) ([]string, error) {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	stored, err := s.driver.hashesOf(ctx, tx, names)
	if err != nil {
		return nil, fmt.Errorf("schedule: sync: read %d stored schedules: %w", len(names), err)
	}
	outcomes := make([]string, len(defs))
	var fresh []int // indexes in defs of the schedules not stored yet
	for i, d := range defs {
		hash, found := stored[d.Name]
		switch {
		case !found:
			fresh = append(fresh, i)
		case hash == d.hash():
			outcomes[i] = "unchanged"
		}
	}
	// In name order: two Syncs inserting the same new names wait for each
	// other's rows in one order, and cannot deadlock.
	slices.SortFunc(fresh, func(a, b int) int { return strings.Compare(defs[a].Name, defs[b].Name) })
	inserted, err := s.insertMany(ctx, tx, defs, fresh)
	if err != nil {
		return nil, fmt.Errorf("schedule: sync: store %d new schedules: %w", len(fresh), err)
	}
	items := make([]todolist.NewItem, 0, len(inserted))
	for _, i := range fresh {
		if next, ok := inserted[defs[i].Name]; ok {
			outcomes[i] = "added"
			if !next.IsZero() {
				items = append(items, todolist.NewItem{ID: defs[i].Name, Due: defs[i].due(next)})
			}
		}
	}
	if err := s.list.AddManyTx(ctx, tx, items); err != nil {
		return nil, fmt.Errorf("schedule: sync: add the first slots of %d new schedules: %w", len(items), err)
	}
	// In name order too, whatever the order declared: each schedule is
	// locked, its item then its row (load), until the Sync commits, so two
	// Syncs changing the same schedules in different orders deadlocked
	// (two replicas starting at once: PostgreSQL's 40P01 in every one of
	// three rounds of 1,000 schedules). A firing is no party to this
	// order: it never waits for an item (see load).
	var changed []int
	for i := range defs {
		if outcomes[i] == "" {
			changed = append(changed, i)
		}
	}
	slices.SortFunc(changed, func(a, b int) int { return strings.Compare(defs[a].Name, defs[b].Name) })
	for _, i := range changed {
		if outcomes[i], err = s.sync(ctx, tx, defs[i]); err != nil {
			return nil, fmt.Errorf("schedule: sync %q: %w", defs[i].Name, err)
		}
	}
	return outcomes, nil
}

// insertMany stores the definitions defs[i] of each i in which and
// returns the first slot of each it inserted; a name another process
// stored meanwhile is left as it was and not returned.
func (s *Scheduler) insertMany(ctx context.Context, tx *sqlx.Tx, defs []Definition, which []int) (map[string]time.Time, error) {
	now := s.clock.Now()
	firsts := make(map[string]time.Time, len(which))
	rows := make([]state, len(which))
	for k, i := range which {
		d := defs[i]
		firsts[d.Name] = d.nextAfter(now, 0)
		rows[k] = d.row(firsts[d.Name])
	}
	names, err := s.driver.insertSchedules(ctx, tx, rows)
	inserted := make(map[string]time.Time, len(names))
	for _, name := range names {
		inserted[name] = firsts[name]
	}
	return inserted, err
}

// untilOf is d.Until as stored: zero for no end.
func untilOf(d Definition) int64 {
	if d.Until.IsZero() {
		return 0
	}
	return sqldb.EncodeTime(d.Until)
}
