package todolist

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"
	"weak"

	"github.com/jmoiron/sqlx"
	"go.opentelemetry.io/otel/metric"
)

// backlogTimeout bounds the query the backlog gauge makes at each
// collection: an exporter may collect without a deadline.
const backlogTimeout = 5 * time.Second

// The backlog gauge is read from the database when the metrics are
// collected, never while items are worked: by one reader per meter and
// database, with one query for every list opened on them. A list opened
// again (a dashboard opens one per request) adds nothing, and a
// collection costs one query however many lists there are. A callback
// per list would not do: the SDK keeps only the first callbacks given
// to an instrument's constructor, and nothing would unregister them.
//
// A reader holds its database weakly, so that the gauge keeps no
// database alive: once it is gone, the reader observes nothing and the
// next list opened unregisters it (a callback cannot: the SDK holds its
// lock while callbacks run).
var backlogs = struct {
	sync.Mutex
	readers map[backlogKey]*backlogReader
}{readers: map[backlogKey]*backlogReader{}}

type backlogKey struct {
	meter metric.Meter
	db    weak.Pointer[sqlx.DB]
}

// backlogReader counts the pending items of the lists of one database
// for one meter's gauge.
type backlogReader struct {
	db    weak.Pointer[sqlx.DB]
	gauge metric.Int64ObservableGauge
	reg   metric.Registration

	mu sync.Mutex
	// lists are the names read, each with its attribute.
	lists map[string][]metric.ObserveOption
}

// watchBacklog has the backlog of list (on db, its attribute in observe)
// observed through gauge, made by meter.
func watchBacklog(meter metric.Meter, gauge metric.Int64ObservableGauge, db *sqlx.DB, list string, observe []metric.ObserveOption) error {
	key := backlogKey{meter: meter, db: weak.Make(db)}
	// A meter of a type that cannot be a map key gets a reader per list.
	shared := reflect.TypeOf(meter).Comparable()
	backlogs.Lock()
	defer backlogs.Unlock()
	sweepBacklogs()
	var r *backlogReader
	if shared {
		r = backlogs.readers[key]
	}
	if r == nil {
		r = &backlogReader{db: key.db, gauge: gauge, lists: map[string][]metric.ObserveOption{}}
		reg, err := meter.RegisterCallback(r.observe, gauge)
		if err != nil {
			return fmt.Errorf("register the backlog gauge: %w", err)
		}
		r.reg = reg
		if shared {
			backlogs.readers[key] = r
		}
	}
	r.mu.Lock()
	r.lists[list] = observe
	r.mu.Unlock()
	return nil
}

// sweepBacklogs unregisters the readers whose database is gone; the
// caller holds backlogs' lock.
func sweepBacklogs() {
	for key, r := range backlogs.readers {
		if r.db.Value() == nil {
			_ = r.reg.Unregister()
			delete(backlogs.readers, key)
		}
	}
}

// observe counts the pending items of the reader's lists in one query
// and observes each list's count, zero for a list with none.
func (r *backlogReader) observe(ctx context.Context, o metric.Observer) error {
	db := r.db.Value()
	if db == nil {
		return nil
	}
	r.mu.Lock()
	names := make([]string, 0, len(r.lists))
	opts := make([][]metric.ObserveOption, 0, len(r.lists))
	for name, opt := range r.lists {
		names = append(names, name)
		opts = append(opts, opt)
	}
	r.mu.Unlock()
	counts, err := countPending(ctx, db, names)
	if err != nil {
		return err
	}
	for i, name := range names {
		o.ObserveInt64(r.gauge, counts[name], opts[i]...)
	}
	return nil
}

// countPending counts the items of each of lists that are not parked, on
// the index of unparked items.
func countPending(ctx context.Context, db *sqlx.DB, lists []string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, backlogTimeout)
	defer cancel()
	query, args, err := sqlx.In(`SELECT list, COUNT(*) FROM todolist_items WHERE parked = 0 AND list IN (?) GROUP BY list`, lists)
	if err != nil {
		return nil, fmt.Errorf("todolist: count pending items of %d lists: %w", len(lists), err)
	}
	rows, err := db.QueryContext(ctx, db.Rebind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("todolist: count pending items of %d lists: %w", len(lists), err)
	}
	defer rows.Close()
	counts := make(map[string]int64, len(lists))
	for rows.Next() {
		var list string
		var n int64
		if err := rows.Scan(&list, &n); err != nil {
			return nil, fmt.Errorf("todolist: count pending items of %d lists: %w", len(lists), err)
		}
		counts[list] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("todolist: count pending items of %d lists: %w", len(lists), err)
	}
	return counts, nil
}
