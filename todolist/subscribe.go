package todolist

import (
	"fmt"

	"github.com/passage-of-time/passage/bus"
)

// Subscribe subscribes the projection's rules to b, one subscription per
// declared rule, applying each event on the list's own database as it is
// published. opts apply to every subscription (for example bus.Async); each
// is named after the list and the event type unless opts name it. On error
// no subscription is left behind.
//
// A bus delivers events after they were stored, so a crash in between can
// leave the list behind its events; where the events are appended in a
// transaction, prefer [Projection.Apply] in that transaction.
func (p *Projection) Subscribe(b *bus.Bus, opts ...bus.SubscribeOption) ([]*bus.Subscription, error) {
	if p.err != nil {
		return nil, p.err
	}
	if b == nil {
		return nil, fmt.Errorf("todolist: subscribe projection of %q: %w: bus must not be nil", p.list.name, ErrInvalidArgument)
	}
	subs := make([]*bus.Subscription, 0, len(p.rules))
	for _, r := range p.rules {
		sub, err := r.subscribe(b, r.event, opts)
		if err != nil {
			for _, s := range subs {
				s.Unsubscribe()
			}
			return nil, fmt.Errorf("todolist: subscribe projection of %q to %s: %w", p.list.name, r.event, err)
		}
		subs = append(subs, sub)
	}
	return subs, nil
}
