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

// SyncResult says what Sync did with each declared schedule.
type SyncResult struct {
	Added, Changed, Unchanged []string
}

// Sync makes the stored schedules match the declared ones, as an
// application does at every start. A schedule that is new is stored, its
// first slot the first after now. One whose definition is unchanged is
// left exactly as it is: its next slot neither fires again nor moves. One
// whose definition changed takes effect at once: its next slot is
// recomputed from now, so "every hour" replaces "every 8 hours" without
// waiting out the pending 8 hours. Its runs so far still count toward
// MaxRuns. A paused schedule stays paused.
//
// All the definitions are synced in one transaction: all or none.
//
// Stored schedules that are not declared are left alone (another process
// may declare them, or an operator may have added them); Delete removes
// one. Schedules this process declares fire by their Spec; others by the
// stored text of theirs, which must read back (Parse).
func (s *Scheduler) Sync(ctx context.Context, defs ...Definition) (SyncResult, error) {
	var res SyncResult
	seen := map[string]bool{}
	for _, d := range defs {
		if err := d.validate(); err != nil {
			return res, err
		}
		if seen[d.Name] {
			return res, fmt.Errorf("%w: sync: schedule %q is declared twice", ErrInvalidSpec, d.Name)
		}
		seen[d.Name] = true
	}
	// One transaction for all of them: a start declaring thousands of
	// schedules costs one commit, and either all of them are synced or
	// none.
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		res = SyncResult{}
		outcomes, err := s.syncAll(ctx, tx, defs)
		if err != nil {
			return err
		}
		for i, d := range defs {
			switch outcomes[i] {
			case "added":
				res.Added = append(res.Added, d.Name)
			case "changed":
				res.Changed = append(res.Changed, d.Name)
			default:
				res.Unchanged = append(res.Unchanged, d.Name)
			}
		}
		return nil
	})
	if err != nil {
		return SyncResult{}, err
	}
	// Memory stays flat in the number of schedules: a definition is kept
	// only when its stored text does not read back (Easter, unions,
	// exceptions); the others fire from what is stored, as in any process.
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range defs {
		if readsBack(d.Spec) {
			delete(s.declared, d.Name)
		} else {
			s.declared[d.Name] = d
		}
	}
	return res, nil
}

// sync stores one definition in tx and reports "added", "changed" or
// "unchanged".
func (s *Scheduler) sync(ctx context.Context, tx *sqlx.Tx, d Definition) (string, error) {
	hash := d.hash()
	st, found, err := s.load(ctx, tx, d.Name)
	if err != nil {
		return "", err
	}
	if found && st.Hash == hash {
		return "unchanged", nil
	}
	next := d.nextAfter(s.clock.Now(), st.Runs)
	outcome := "added"
	if !found {
		err = s.driver.insertSchedule(ctx, tx, d.row(next))
	} else {
		outcome = "changed"
		if st.Paused != 0 {
			next = time.Time{}
		} else if st.NextSlot != 0 && !sqldb.DecodeTime(st.NextSlot).After(s.clock.Now()) {
			// The old definition's slot had come but not fired yet; the
			// new one counts from now, so that slot is skipped: say so.
			if err := s.driver.recordFired(ctx, tx, []move{{name: d.Name, skipped: 1, next: st.NextSlot}}); err != nil {
				return "", err
			}
		}
		err = s.driver.updateDefinition(ctx, tx, d.row(next))
		if err == nil {
			// Remove first: a re-add never brings an item forward.
			err = s.list.RemoveTx(ctx, tx, d.Name)
		}
	}
	if err == nil && !next.IsZero() {
		err = s.list.AddTx(ctx, tx, d.Name, d.due(next))
	}
	return outcome, err
}

// maxParsed bounds the cache of specs read back from their text.
const maxParsed = 4096

// parsed returns the spec a stored text reads back to (in the zone the
// text names), from a small cache: many schedules share their spec, and
// reading a spec costs more than firing a slot.
func (s *Scheduler) parsed(text string) (Spec, error) {
	s.mu.Lock()
	spec, ok := s.specs[text]
	s.mu.Unlock()
	if ok {
		return spec, nil
	}
	spec, err := Parse(text, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.specs) >= maxParsed {
		clear(s.specs) // simplest bound: start over
	}
	s.specs[text] = spec
	return spec, nil
}

// readsBack reports whether Parse reads spec's text back to the same spec.
func readsBack(spec Spec) bool {
	back, err := Parse(spec.String(), nil)
	return err == nil && back.String() == spec.String()
}

// definition returns how to fire a stored schedule: as this process
// declared it, else from its stored text.
func (s *Scheduler) definition(st state) (Definition, error) {
	s.mu.Lock()
	d, ok := s.declared[st.Name]
	s.mu.Unlock()
	if ok && d.hash() == st.Hash {
		return d, nil
	}
	spec, err := s.parsed(st.Spec)
	if err != nil {
		return Definition{}, fmt.Errorf("schedule %q: its stored spec %q does not read back (declare it with Sync in the process that fires it): %w", st.Name, st.Spec, err)
	}
	d = Definition{Name: st.Name, Spec: spec, Command: st.Command, Payload: st.Payload, MaxRuns: st.MaxRuns, Jitter: time.Duration(st.Jitter), Overlap: parseOverlap(st.Overlap)}
	if st.Until != 0 {
		d.Until = sqldb.DecodeTime(st.Until)
	}
	d.CatchUp = parsePolicy(st.CatchUp)
	return d, nil
}

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
