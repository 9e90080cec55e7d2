package todolist

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// NewItem is one item for [List.AddMany]: an ID and the time it falls due,
// the arguments of [List.Add].
type NewItem struct {
	// ID identifies the item within its list, e.g. an order ID.
	ID string
	// Due is the time the item falls due.
	Due time.Time
}

// AddMany puts items on the list on the list's own database, in one
// transaction: all of them or, on an error, none. See [List.AddManyTx].
func (l *List) AddMany(ctx context.Context, items []NewItem) error {
	rows, err := l.prepareMany(items)
	if err != nil || len(rows.ids) == 0 {
		return err
	}
	if len(rows.ids) <= l.chunkSize() {
		// One statement is atomic on its own: no transaction's round
		// trips are needed.
		if err := l.execMany(ctx, l.db, rows); err != nil {
			return err
		}
		l.added(ctx, rows)
		return nil
	}
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("todolist: add %d items to %q: begin: %w", len(items), l.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := l.execMany(ctx, tx, rows); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("todolist: add %d items to %q: commit: %w", len(items), l.name, err)
	}
	l.added(ctx, rows)
	return nil
}

// AddManyTx is [List.AddTx] for many items on ext, typically the caller's
// *sqlx.Tx (a rolled-back transaction leaves the list as it was). ext must
// belong to the list's database. Passed a *sqlx.DB, it is atomic only for
// up to one statement's worth of items (1,000 on SQLite, 5,000 on
// PostgreSQL); use [List.AddMany] instead.
//
// The result is the one of calling [List.AddTx] for each item in order —
// the rules are Add's: a new ID is added; the same or an earlier due time
// changes nothing; a later one moves the item and makes it new work. So an
// ID given more than once ends up due at the latest of its due times (or
// where it was, if that is later still). The items are written a
// statement per chunk rather than per item, which is what makes AddMany
// fast (see BenchmarkAddMany).
//
// Every item is checked before anything is written: an invalid ID or due
// time fails the whole call with [ErrInvalidID] or [ErrInvalidTime], the
// error naming the item's index in items and its ID. An empty items adds
// nothing.
//
// The items are written sorted by ID, so that two AddMany calls sharing
// IDs lock the rows in one order on PostgreSQL and cannot deadlock each
// other.
func (l *List) AddManyTx(ctx context.Context, ext sqlx.ExtContext, items []NewItem) error {
	if ext == nil {
		return fmt.Errorf("todolist: add %d items to %q: %w: ext must not be nil", len(items), l.name, ErrInvalidArgument)
	}
	rows, err := l.prepareMany(items)
	if err != nil || len(rows.ids) == 0 {
		return err
	}
	for _, id := range rows.ids {
		touch(ctx, l.name, id)
	}
	if err := l.execMany(ctx, ext, rows); err != nil {
		return err
	}
	l.added(ctx, rows)
	return nil
}

// added counts rows added, for the items.added metric.
func (l *List) added(ctx context.Context, rows manyRows) {
	l.ins.added.Add(ctx, int64(len(rows.ids)), l.ins.add...)
}

// prepareMany validates items and collapses each ID to its latest due
// time, which is what a sequence of Adds of that ID leaves: only a later
// due time moves an item. (A single statement must not touch one row
// twice anyway: PostgreSQL refuses it.)
func (l *List) prepareMany(items []NewItem) (manyRows, error) {
	// Sorted as (ID, encoded due) pairs rather than as NewItems: 24 bytes
	// to move a swap instead of 40, and one string comparison a step where
	// cmp.Compare makes two — the sort was a tenth of AddMany's time.
	type row struct {
		id  string
		due int64
	}
	sorted := make([]row, len(items))
	for i, it := range items {
		if err := validateID(it.ID); err != nil {
			return manyRows{}, fmt.Errorf("todolist: add %d items to %q: item %d: %w", len(items), l.name, i, err)
		}
		if err := validateTime("due time", it.Due); err != nil {
			return manyRows{}, fmt.Errorf("todolist: add %d items to %q: item %d (%q): %w", len(items), l.name, i, it.ID, err)
		}
		sorted[i] = row{it.ID, sqldb.EncodeTime(it.Due)}
	}
	slices.SortFunc(sorted, func(a, b row) int { return strings.Compare(a.id, b.id) })
	rows := manyRows{ids: make([]string, 0, len(sorted)), dues: make([]int64, 0, len(sorted))}
	for _, r := range sorted {
		if n := len(rows.ids); n > 0 && rows.ids[n-1] == r.id {
			rows.dues[n-1] = max(rows.dues[n-1], r.due)
			continue
		}
		rows.ids = append(rows.ids, r.id)
		rows.dues = append(rows.dues, r.due)
	}
	return rows, nil
}

func (l *List) chunkSize() int {
	if l.addChunk > 0 {
		return l.addChunk
	}
	return l.drv.addManyChunk()
}

// execMany writes rows a chunk at a time, in order.
func (l *List) execMany(ctx context.Context, ext sqlx.ExtContext, rows manyRows) error {
	size := l.chunkSize()
	if start, err := l.drv.addMany(ctx, ext, l.name, rows, size); err != nil {
		return l.manyFailed(rows, start, min(start+size, len(rows.ids)), err)
	}
	return nil
}

func (l *List) manyFailed(rows manyRows, start, end int, err error) error {
	return fmt.Errorf("todolist: add %d items to %q: items %q to %q: %w", len(rows.ids), l.name, rows.ids[start], rows.ids[end-1], err)
}

// removeManyTx is [List.RemoveTx] for each of ids, in a statement or two
// rather than one per ID: those of the items ctx's action works are
// removed and counted completed together, the others removed. A
// [Projection] removes runs of items this way.
func (l *List) removeManyTx(ctx context.Context, ext sqlx.ExtContext, ids []string) error {
	if ext == nil {
		return fmt.Errorf("todolist: remove %d items from %q: %w: ext must not be nil", len(ids), l.name, ErrInvalidArgument)
	}
	if len(ids) == 1 {
		return l.RemoveTx(ctx, ext, ids[0])
	}
	var counted, plain []string
	for i, id := range ids {
		if err := validateID(id); err != nil {
			return fmt.Errorf("todolist: remove %d items from %q: item %d: %w", len(ids), l.name, i, err)
		}
		touch(ctx, l.name, id)
		if workingOn(ctx, l.name, id) {
			counted = append(counted, id)
		} else {
			plain = append(plain, id)
		}
	}
	for start := 0; start < len(plain); start += MaxBatchSize {
		chunk := plain[start:min(start+MaxBatchSize, len(plain))]
		if err := l.drv.removeMany(ctx, ext, l.name, chunk); err != nil {
			return fmt.Errorf("todolist: remove %d items from %q: %w", len(chunk), l.name, err)
		}
	}
	for start := 0; start < len(counted); start += MaxBatchSize {
		chunk := counted[start:min(start+MaxBatchSize, len(counted))]
		if err := l.drv.removeCompletedMany(ctx, ext, l.name, chunk); err != nil {
			return fmt.Errorf("todolist: remove %d items from %q and count them completed: %w", len(chunk), l.name, err)
		}
	}
	return nil
}
