package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// WithNextBoundary returns env with preview's boundary computation replaced
// by next, so a test can make preview hang the way a boundary computation
// that never yields does.
func WithNextBoundary(env Env, next func(tick.Unit, time.Time, *time.Location) time.Time) Env {
	env.next = next
	return env
}

// RunRecorder returns "ticker run"'s schedule handler on the outbox of
// db (opened, and created, before any transaction of the caller's).
func RunRecorder(ctx context.Context, db *sqldb.DB) (schedule.Handler, error) {
	out, err := openDelivery(ctx, db, relaying{[]sender{{name: "stdout", send: func(context.Context, string, string, []byte) error { return nil }, parallel: 1}}, retries{time.Second, 1}, clockwork.NewRealClock(), slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	// The relay stores where it starts before anything is recorded, as
	// "ticker run"'s does when it starts: a new sink starts from now.
	if _, err := out.relays[0].r.Origin(ctx); err != nil {
		return nil, err
	}
	return runHandler(out, nil), nil
}

// PendingDeliveries counts the records the stdout relay of db has yet to
// deliver.
func PendingDeliveries(ctx context.Context, db *sqldb.DB) (int, error) {
	out, err := openDelivery(ctx, db, relaying{[]sender{{name: "stdout", send: func(context.Context, string, string, []byte) error { return nil }, parallel: 1}}, retries{time.Second, 1}, clockwork.NewRealClock(), slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	b, err := out.relays[0].r.Backlog(ctx)
	return b.Pending, err
}
