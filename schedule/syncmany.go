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
// statement or two per schedule made each start of 100,000 schedules wait
// 17 s on PostgreSQL (39 s the first time). One statement a chunk reads
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
	stored, err := s.hashesOf(ctx, tx, names)
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

// hashesOf reads the stored spec hashes of the named schedules; a name
// not stored is not in the map.
func (s *Scheduler) hashesOf(ctx context.Context, tx *sqlx.Tx, names []string) (map[string]string, error) {
	hashes := make(map[string]string, len(names))
	err := inChunks(len(names), s.chunkSize(), func(from, to int) error {
		var rows []struct {
			Name string `db:"name"`
			Hash string `db:"hash"`
		}
		var err error
		if s.postgres() {
			err = tx.SelectContext(ctx, &rows, selectHashesOfPostgres, names[from:to])
		} else {
			err = tx.SelectContext(ctx, &rows, selectHashesIn+` IN (`+placeholders(to-from, "?")+`)`, anys(names[from:to])...)
		}
		for _, r := range rows {
			hashes[r.Name] = r.Hash
		}
		return err
	})
	return hashes, err
}

// insertMany stores the definitions defs[i] of each i in which, a chunk a
// statement, and returns the first slot of each it inserted; a name
// another process stored meanwhile is left as it was and not returned.
// Chunks are of 1,000 rows on PostgreSQL too: its driver keeps a
// connection's buffer as large as the largest message it sent: eleven
// arrays of 10,000 rows raised BenchmarkEveryMinute's peak heap from 8 to
// 25 MiB, for no gain in speed.
func (s *Scheduler) insertMany(ctx context.Context, tx *sqlx.Tx, defs []Definition, which []int) (map[string]time.Time, error) {
	now := s.clock.Now()
	firsts := make(map[string]time.Time, len(which))
	inserted := make(map[string]time.Time, len(which))
	err := inChunks(len(which), chunk, func(from, to int) error {
		var query string
		var args []any
		if s.postgres() {
			var cols struct {
				names, specs, hashes, commands, catchUps, overlaps []string
				payloads                                           [][]byte
				maxRuns, until, next, jitter                       []int64
			}
			for _, i := range which[from:to] {
				d := defs[i]
				firsts[d.Name] = d.nextAfter(now, 0)
				cols.names = append(cols.names, d.Name)
				cols.specs = append(cols.specs, d.Spec.String())
				cols.hashes = append(cols.hashes, d.hash())
				cols.commands = append(cols.commands, d.Command)
				cols.payloads = append(cols.payloads, d.Payload)
				cols.catchUps = append(cols.catchUps, policyText(d.CatchUp))
				cols.maxRuns = append(cols.maxRuns, int64(d.MaxRuns))
				cols.until = append(cols.until, untilOf(d))
				cols.next = append(cols.next, encodeSlot(firsts[d.Name]))
				cols.jitter = append(cols.jitter, int64(d.Jitter))
				cols.overlaps = append(cols.overlaps, d.Overlap.String())
			}
			query = insertSchedulesPostgres
			args = []any{cols.names, cols.specs, cols.hashes, cols.commands, cols.payloads, cols.catchUps, cols.maxRuns, cols.until, cols.next, cols.jitter, cols.overlaps}
		} else {
			query = insertSchedulesSQLite(to - from)
			for _, i := range which[from:to] {
				d := defs[i]
				firsts[d.Name] = d.nextAfter(now, 0)
				args = append(args, d.Name, d.Spec.String(), d.hash(), d.Command, d.Payload, policyText(d.CatchUp), d.MaxRuns, untilOf(d), encodeSlot(firsts[d.Name]), int64(d.Jitter), d.Overlap.String())
			}
		}
		var names []string
		if err := tx.SelectContext(ctx, &names, query, args...); err != nil {
			return err
		}
		for _, name := range names {
			inserted[name] = firsts[name]
		}
		return nil
	})
	return inserted, err
}

// untilOf is d.Until as stored: zero for no end.
func untilOf(d Definition) int64 {
	if d.Until.IsZero() {
		return 0
	}
	return sqldb.EncodeTime(d.Until)
}
