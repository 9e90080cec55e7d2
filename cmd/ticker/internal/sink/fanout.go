package sink

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// Publisher is the ticker's publishing contract, which every sink meets.
type Publisher interface {
	Publish(ctx context.Context, events ...any) error
}

// Fanout publishes every event to several sinks, one event at a time, and
// remembers per sink and per stream (a unit's boundaries, a schedule's
// slots) the last position each acknowledged.
//
// The ticker publishes each unit's boundaries in order and, after a failure,
// offers the same events again from its cursor. Without the memory, a sink
// that had already taken an event (stdout, a healthy webhook) would get it
// again because another sink failed. Every sink is tried even when one fails;
// the failures come back joined. The memory lives in this process: after a
// restart, delivery is at least once, and receivers deduplicate by ID.
type Fanout struct {
	sinks []Publisher

	mu    sync.Mutex
	acked []map[string]time.Time // per sink: stream key → last position acknowledged
}

// NewFanout returns a Fanout over sinks.
func NewFanout(sinks ...Publisher) *Fanout {
	acked := make([]map[string]time.Time, len(sinks))
	for i := range acked {
		acked[i] = map[string]time.Time{}
	}
	return &Fanout{sinks: sinks, acked: acked}
}

// Publish implements the ticker's Publisher.
func (f *Fanout) Publish(ctx context.Context, events ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for i, s := range f.sinks {
		if err := f.publishTo(ctx, i, s, events); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// publishTo stops at a sink's first failure, so that sink never sees a later
// event before an earlier one.
func (f *Fanout) publishTo(ctx context.Context, i int, s Publisher, events []any) error {
	for _, e := range events {
		key, at, err := position(e)
		if err != nil {
			return err
		}
		if last, ok := f.acked[i][key]; ok && !at.After(last) {
			continue
		}
		if err := s.Publish(ctx, e); err != nil {
			return err
		}
		f.acked[i][key] = at
	}
	return nil
}

// position orders what is published: boundaries per unit, skip reports
// per unit by their last skipped boundary, a schedule's runs by their slot
// (a failed run is retried under the same slot, and a schedule's slots only
// move forward: a changed or resumed schedule takes slots after now), its
// skip reports by their last skipped slot. A manual run's position is its
// own slot id, never seen again.
func position(e any) (key string, at time.Time, err error) {
	switch e := e.(type) {
	case tick.TicksSkipped:
		return "skipped/" + string(e.Unit), e.To, nil
	case tick.Event:
		return string(e.Unit()), e.Boundary(), nil
	case schedule.Run:
		if e.Manual {
			return "run/" + e.SlotID, e.Slot, nil
		}
		return "run/" + e.Schedule, e.Slot, nil
	case schedule.SlotsSkipped:
		return "slots-skipped/" + e.Schedule, e.To, nil
	}
	_, err = NewRecord(e)
	return "", time.Time{}, err
}
