package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/metric"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// The relays' horizon on PostgreSQL: a relay reads only what committed
// before the oldest transaction still running on the server holds an xid
// (see the outbox package), so one session left idle in a transaction —
// in any database of the server, by any program — holds every delivery
// back until it ends, and nothing of passage's is failing meanwhile.
// "ticker run" and "ticker serve" name that session (sqldb.HorizonHolders:
// pid, application, state, how long): /healthz answers 503 with it once
// it is older than --horizon-limit, the log names it once, and /metrics
// exports its age (passage.postgres.horizon.age).
const (
	// defaultHorizonLimit is --horizon-limit's default: the 5 minutes
	// after which /healthz reports delivery as behind (deliveryLagLimit),
	// which a held horizon brings about, named by its cause.
	defaultHorizonLimit = 5 * time.Minute
	// horizonFloor is the youngest transaction the gauge counts: those of
	// a second or less are the database at work, not a holder.
	horizonFloor = time.Second
	// horizonCheckEvery is how often "ticker run" looks for a holder to
	// log when nothing asks (every --horizon-limit when shorter).
	horizonCheckEvery = 30 * time.Second
	// horizonNamed bounds the holders /healthz names; horizonRead those
	// one check reads (the log's memory of whom it named needs the list
	// whole).
	horizonNamed, horizonRead = 5, 100
	// horizonLimitMax bounds --horizon-limit: past it, a transaction has
	// held every relay back for a day.
	horizonLimitMax = 24 * time.Hour
)

// addHorizonLimit declares --horizon-limit on c.
func addHorizonLimit(c *cobra.Command) *time.Duration {
	return c.Flags().Duration("horizon-limit", defaultHorizonLimit,
		"PostgreSQL: how long a transaction may hold the outbox relays back before /healthz answers 503 naming its session (pid, application, state, how long) and the log names it; 0: never (1s to 24h, or 0; passage_postgres_horizon_age_seconds on /metrics reports it either way)")
}

// checkHorizonLimit checks --horizon-limit's value.
func checkHorizonLimit(d time.Duration) error {
	if d != 0 && (d < time.Second || d > horizonLimitMax) {
		return usagef("--horizon-limit %s: must be between 1s and %s, or 0 to never report a transaction holding delivery back", d, horizonLimitMax)
	}
	return nil
}

// horizon watches the relays' horizon on a PostgreSQL database; nil (on
// SQLite, which has none) watches nothing, and every method takes it.
type horizon struct {
	db     *sqldb.DB
	limit  time.Duration // 0: holders are measured, never reported
	logger *slog.Logger

	mu sync.Mutex
	// named holds the pids of the holders logged, while they hold: a
	// session is named once, not at every check, and again if it holds
	// the horizon again after letting it go.
	named map[int]bool
}

// newHorizon returns the watcher of db's horizon, nil unless db is
// PostgreSQL.
func newHorizon(db *sqldb.DB, limit time.Duration, logger *slog.Logger) *horizon {
	if db == nil || !db.IsPostgres() {
		return nil
	}
	return &horizon{db: db, limit: limit, logger: logger, named: map[int]bool{}}
}

// check reads the transactions holding the horizon, and returns the age
// of the oldest (0 when none is older than horizonFloor) and those
// older than the limit, the oldest first, logging each new one.
func (h *horizon) check(ctx context.Context) (oldest time.Duration, over []sqldb.HorizonHolder, err error) {
	if h == nil {
		return 0, nil, nil
	}
	from := horizonFloor
	if h.limit > 0 {
		from = min(from, h.limit)
	}
	holders, err := sqldb.HorizonHolders(ctx, h.db, from, horizonRead)
	if err != nil {
		return 0, nil, err
	}
	for _, x := range holders {
		if x.Open >= horizonFloor {
			oldest = max(oldest, x.Open)
		}
		if h.limit > 0 && x.Open >= h.limit {
			over = append(over, x)
		}
	}
	h.name(over, len(holders) == horizonRead)
	return oldest, over, nil
}

// name logs the holders not named yet, and forgets the ones no longer
// listed (unless the list was cut short: they may hold still).
func (h *horizon) name(over []sqldb.HorizonHolder, cut bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	listed := make(map[int]bool, len(over))
	for _, x := range over {
		listed[x.PID] = true
		if h.named[x.PID] {
			continue
		}
		h.named[x.PID] = true
		h.logger.Warn("a PostgreSQL transaction holds every outbox relay back: what was written after it began is delivered only once it ends (end it, or set idle_in_transaction_session_timeout; named once per session)",
			"holder", x.String(), "pid", x.PID, "application", x.Application, "state", x.State,
			"open", x.Open.Round(time.Second), "limit", h.limit)
	}
	if cut {
		return
	}
	for pid := range h.named {
		if !listed[pid] {
			delete(h.named, pid)
		}
	}
}

// health is nil unless a transaction has held the horizon longer than
// the limit: then it names the oldest holders, for /healthz.
func (h *horizon) health(ctx context.Context) error {
	if h == nil || h.limit == 0 {
		return nil
	}
	_, over, err := h.check(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if len(over) == 0 {
		return nil
	}
	names := make([]string, 0, horizonNamed+1)
	for _, x := range over[:min(len(over), horizonNamed)] {
		names = append(names, x.String())
	}
	if len(over) > horizonNamed {
		names = append(names, fmt.Sprintf("and %d more", len(over)-horizonNamed))
	}
	what := fmt.Sprintf("a transaction open longer than %v holds", h.limit)
	if len(over) > 1 {
		what = fmt.Sprintf("%d transactions open longer than %v hold", len(over), h.limit)
	}
	return fmt.Errorf("postgres: %s every outbox relay back (what was written after it began is delivered only once it ends): %s",
		what, strings.Join(names, "; "))
}

// watch checks the horizon every horizonCheckEvery (or every limit, if
// shorter) until ctx ends or stop is closed, so that a holder is logged
// when nothing asks /healthz or /metrics. A failed check is logged once
// until one works.
func (h *horizon) watch(ctx context.Context, stop <-chan struct{}) {
	if h == nil || h.limit == 0 {
		return
	}
	every := time.NewTicker(min(h.limit, horizonCheckEvery))
	defer every.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-every.C:
		}
		cctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		_, _, err := h.check(cctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			h.logger.Warn("cannot read which PostgreSQL sessions hold the outbox relays back; tried again at every check", "err", err)
			failing = true
		case err == nil:
			failing = false
		}
	}
}

// register exports the age of the oldest transaction holding the
// horizon, read at each collection: passage.postgres.horizon.age, 0 when
// none has been open longer than horizonFloor.
func (h *horizon) register(meter metric.Meter) error {
	if h == nil {
		return nil
	}
	var errs instrumentErrors
	age := errs.gauge(meter, "passage.postgres.horizon.age", "s",
		"How long the oldest PostgreSQL transaction holding the outbox relays' horizon (it holds an xid) has been open; 0 when none is older than a second.")
	if err := errs.err(); err != nil {
		return err
	}
	_, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
		oldest, _, err := h.check(ctx)
		if err != nil {
			return fmt.Errorf("/metrics: %w", err)
		}
		o.ObserveFloat64(age, oldest.Seconds())
		return nil
	}, age)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}
