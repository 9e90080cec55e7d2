package todolist

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/bus"
)

// Projection keeps a list up to date from domain events: some events add an
// item, others remove it. It is the to-do list's read model, declared rather
// than hand-written:
//
//	p := todolist.NewProjection(pending)
//	todolist.AddOn(p, func(e OrderInitiated) (string, time.Time) { return e.OrderID, e.TimeoutAfter })
//	todolist.RemoveOn(p, func(e OrderCompleted) string { return e.OrderID })
//	todolist.RemoveOn(p, func(e OrderCancelled) string { return e.OrderID })
//
// Apply it inside the transaction that appends the events, so the list never
// drifts from them, or subscribe it to a bus. Because [List.Add] and
// [List.Remove] are idempotent, replaying events through a projection is
// harmless.
//
// Declare the rules before first use; after that a Projection is safe for
// concurrent use.
type Projection struct {
	list  *List
	rules []rule
	err   error // the first invalid declaration, reported by Apply and Subscribe
}

// rule applies one declared event type; E is only known where it was
// declared, so the rule carries it in closures. remove is set for a
// RemoveOn rule: it returns the ID an event removes, so that Apply
// removes a run of them set-wise.
type rule struct {
	event     string
	apply     applier
	remove    func(event any) (id string, ok bool)
	matches   func(event any) bool
	subscribe subscriber
}

// NewProjection returns a projection writing to list, with no rules yet.
func NewProjection(list *List) *Projection {
	p := &Projection{list: list}
	if list == nil {
		p.err = fmt.Errorf("todolist: new projection: %w", ErrNilList)
	}
	return p
}

// AddOn declares that an event of type E adds an item to the list: item
// returns its ID and due time (see [List.Add] for what adding an existing
// ID does). An event matches when its dynamic type is E or, for an
// interface E, implements E. A nil item function is reported by Apply and
// Subscribe.
func AddOn[E any](p *Projection, item func(event E) (id string, due time.Time)) {
	if item == nil {
		p.invalid(fmt.Errorf("todolist: projection AddOn[%s]: nil item function", typeName[E]()))
		return
	}
	addRule[E](p, func(ctx context.Context, ext sqlx.ExtContext, event any) error {
		e, ok := event.(E)
		if !ok {
			return nil
		}
		id, due := item(e)
		return p.list.AddTx(ctx, ext, id, due)
	})
}

// RemoveOn declares that an event of type E removes an item from the list:
// id returns which. Matching is as for [AddOn]. A nil id function is
// reported by Apply and Subscribe.
func RemoveOn[E any](p *Projection, id func(event E) string) {
	if id == nil {
		p.invalid(fmt.Errorf("todolist: projection RemoveOn[%s]: nil id function", typeName[E]()))
		return
	}
	addRule[E](p, func(ctx context.Context, ext sqlx.ExtContext, event any) error {
		e, ok := event.(E)
		if !ok {
			return nil
		}
		return p.list.RemoveTx(ctx, ext, id(e))
	})
	p.rules[len(p.rules)-1].remove = func(event any) (string, bool) {
		e, ok := event.(E)
		if !ok {
			return "", false
		}
		return id(e), true
	}
}

func addRule[E any](p *Projection, apply applier) {
	matches := func(event any) bool {
		_, ok := event.(E)
		return ok
	}
	p.rules = append(p.rules, rule{event: typeName[E](), apply: apply, matches: matches, subscribe: subscriberFor[E](p, apply)})
}

func (p *Projection) invalid(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Apply updates the list for events, in order, on ext — typically the
// transaction appending them, so that a rolled-back append leaves the list
// as it was. Events no rule matches are ignored, so an event store can hand
// over everything it appends. It stops at the first failure, which names the
// event; in a transaction, roll back.
//
// Consecutive removals (events matching [RemoveOn] rules, with no
// addition between them) are written together, in a statement or two
// whatever their number, with the effect of removing them one by one —
// including the completion of items the action of ctx works (see
// [List.RemoveTx]): applying the events of a batch at once costs a
// round trip per run rather than per event.
func (p *Projection) Apply(ctx context.Context, ext sqlx.ExtContext, events ...any) error {
	if p.err != nil {
		return p.err
	}
	if ext == nil {
		return fmt.Errorf("todolist: projection apply: %w: ext must not be nil", ErrInvalidArgument)
	}
	var (
		removals []string
		first    string // the event type of the run's first removal
	)
	flush := func() error {
		if len(removals) == 0 {
			return nil
		}
		err := p.list.removeManyTx(ctx, ext, removals)
		removals = removals[:0]
		if err != nil {
			return fmt.Errorf("todolist: project %s onto %q: %w", first, p.list.name, err)
		}
		return nil
	}
	for _, event := range events {
		for _, r := range p.rules {
			if !r.matches(event) {
				continue
			}
			if r.remove != nil {
				if id, ok := r.remove(event); ok {
					if err := validateID(id); err != nil {
						return fmt.Errorf("todolist: project %s onto %q: remove: %w", r.event, p.list.name, err)
					}
					if len(removals) == 0 {
						first = r.event
					}
					removals = append(removals, id)
				}
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			if err := r.apply(ctx, ext, event); err != nil {
				return fmt.Errorf("todolist: project %s onto %q: %w", r.event, p.list.name, err)
			}
		}
	}
	return flush()
}

// subscriber subscribes one rule to a bus; E is only known where the rule
// was declared.
type subscriber func(b *bus.Bus, name string, opts []bus.SubscribeOption) (*bus.Subscription, error)

func subscriberFor[E any](p *Projection, apply applier) subscriber {
	return func(b *bus.Bus, name string, opts []bus.SubscribeOption) (*bus.Subscription, error) {
		handler := func(ctx context.Context, event E) error {
			if err := apply(ctx, p.list.db, event); err != nil {
				return fmt.Errorf("todolist: project %s onto %q: %w", name, p.list.name, err)
			}
			return nil
		}
		opts = append([]bus.SubscribeOption{bus.Name(fmt.Sprintf("todolist %q: %s", p.list.name, name))}, opts...)
		return bus.Subscribe(b, handler, opts...)
	}
}

type applier func(ctx context.Context, ext sqlx.ExtContext, event any) error

func typeName[E any]() string {
	return reflect.TypeFor[E]().String()
}
