package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// ErrInvalidOption is returned by [New] for an option with an unusable
// value.
var ErrInvalidOption = errors.New("dashboard: invalid option")

// Dashboard serves the pages and the JSON API; it is an http.Handler.
// It is safe for concurrent use.
type Dashboard struct {
	db        *sqlx.DB
	clock     clockwork.Clock
	loc       *time.Location
	token     string
	logger    *slog.Logger
	scheduler *schedule.Scheduler
	engine    *orchestration.Engine
	counts    func() map[tick.Unit]TickerCounts
	refresh   time.Duration
	base      string
	lag       *lagHistory
	every     time.Duration
	pages     map[string]*template.Template
	handler   http.Handler

	hosts        []string
	sessionTTL   time.Duration
	secureCookie bool
	sessions     sessions
	guards       guards
	doneKey      []byte
	triggerNote  string
	bodyTimeout  time.Duration
	// requestTimeout bounds a request's database work (WithRequestTimeout).
	requestTimeout time.Duration
	// horizonGrace is how long a transaction may hold PostgreSQL's
	// horizon before the summary names it (WithHorizonGrace).
	horizonGrace time.Duration

	summary summaryCache

	mu      sync.Mutex
	stop    context.CancelFunc
	stopped chan struct{}
}

// TickerCounts is what a running ticker counted for one unit since its
// process started (its observer's figures): the dashboard shows them when
// given through [WithTickerCounts].
type TickerCounts struct {
	Emitted, Skipped, PublishFailures int64
}

// Option configures a [Dashboard]; an unusable value makes [New] fail
// with [ErrInvalidOption].
type Option func(*Dashboard) error

// WithClock sets the clock "now" is read from (default: the real clock).
func WithClock(c clockwork.Clock) Option {
	return func(d *Dashboard) error {
		if c == nil {
			return fmt.Errorf("%w: clock must not be nil", ErrInvalidOption)
		}
		d.clock = c
		return nil
	}
}

// WithLocation sets the zone times are shown in and the ticker's
// boundaries computed in (default UTC); schedules' next slots are shown
// in their own zones.
func WithLocation(loc *time.Location) Option {
	return func(d *Dashboard) error {
		if loc == nil {
			return fmt.Errorf("%w: location must not be nil", ErrInvalidOption)
		}
		d.loc = loc
		return nil
	}
}

// WithAdminToken allows the actions that change something — re-activate
// a parked item, pause, resume and trigger a schedule, signal and cancel
// a workflow — to requests that prove they know token. Without it (or
// with ""), the dashboard is read-only: no action is offered and every
// action is refused with 403. A token shorter than 16 bytes is refused:
// it would be guessed.
func WithAdminToken(token string) Option {
	return func(d *Dashboard) error {
		if token != "" && len(token) < 16 {
			return fmt.Errorf("%w: the admin token must be at least 16 bytes, it has %d", ErrInvalidOption, len(token))
		}
		d.token = token
		return nil
	}
}

// WithScheduler lets the dashboard pause, resume and trigger schedules
// through s (whose handler receives triggered runs). Without it, and
// with an admin token, the dashboard opens a scheduler of its own whose
// handler refuses triggered runs.
func WithScheduler(s *schedule.Scheduler) Option {
	return func(d *Dashboard) error {
		d.scheduler = s
		return nil
	}
}

// WithEngine lets the dashboard signal and cancel workflow instances
// through e. Without it, and with an admin token, the dashboard opens an
// engine of its own on the database (signals and cancels only append to
// an instance's history and wake it; no workflow needs registering).
func WithEngine(e *orchestration.Engine) Option {
	return func(d *Dashboard) error {
		d.engine = e
		return nil
	}
}

// WithTriggerNote adds note to the message a trigger from the page shows
// after the run's id: where the run goes, e.g. ", recorded in the outbox:
// \"ticker run\" delivers it".
func WithTriggerNote(note string) Option {
	return func(d *Dashboard) error {
		d.triggerNote = note
		return nil
	}
}

// WithLogger sets where actions are logged (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(d *Dashboard) error {
		if l == nil {
			return fmt.Errorf("%w: logger must not be nil", ErrInvalidOption)
		}
		d.logger = l
		return nil
	}
}

// WithTickerCounts shows, on the tickers page, what the ticker running
// in this process counted (ticks emitted, skipped, failed to publish):
// counts is called at each view. The database does not keep them, so a
// dashboard without a ticker beside it ("ticker serve") shows none.
func WithTickerCounts(counts func() map[tick.Unit]TickerCounts) Option {
	return func(d *Dashboard) error {
		d.counts = counts
		return nil
	}
}

// WithRefresh sets how often pages reload themselves (default 10s;
// 0 turns it off).
func WithRefresh(every time.Duration) Option {
	return func(d *Dashboard) error {
		if every < 0 {
			return fmt.Errorf("%w: refresh %s must not be negative", ErrInvalidOption, every)
		}
		d.refresh = every
		return nil
	}
}

// WithBasePath serves the dashboard under path (e.g. "/ops") instead of
// at the root: mount it with mux.Handle("/ops/", d). It answers the
// requests under path+"/" alone (path itself redirects there), reads them
// with the prefix removed, and writes every link, form, redirect and the
// session cookie's path with the prefix. "" and "/" mean the root. A
// path must start with "/" and hold no "?", "#" or "//".
func WithBasePath(path string) Option {
	return func(d *Dashboard) error {
		p := strings.TrimSuffix(path, "/")
		if p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#") || strings.Contains(p, "//")) {
			return fmt.Errorf("%w: base path %q: want \"\" or a path such as \"/ops\"", ErrInvalidOption, path)
		}
		d.base = p
		return nil
	}
}

// defaultRequestTimeout bounds the database work of a request (see
// WithRequestTimeout).
const defaultRequestTimeout = 10 * time.Second

// defaultBodyTimeout bounds how long reading a request's form may take
// (maxBody, input.go, its size).
const defaultBodyTimeout = 10 * time.Second

// WithRequestTimeout bounds the database work of each request (default
// 10s): a request still waiting for a pooled connection, or for an
// answer, when it passes gives up and is answered 503 with Retry-After,
// so that a burst of page views larger than the pool is turned away
// instead of queueing without end. A POST's body is read first, under
// its own limit.
func WithRequestTimeout(timeout time.Duration) Option {
	return func(d *Dashboard) error {
		if timeout <= 0 {
			return fmt.Errorf("%w: request timeout %s: want a positive duration", ErrInvalidOption, timeout)
		}
		d.requestTimeout = timeout
		return nil
	}
}

// WithHorizonGrace sets how long a PostgreSQL transaction may hold the
// outbox relays' horizon — and with it every delivery — before the
// summary names its session (default 1 min; red after 5 min, when
// /healthz answers 503 for delivery behind). On SQLite there is no such
// horizon.
func WithHorizonGrace(grace time.Duration) Option {
	return func(d *Dashboard) error {
		if grace <= 0 {
			return fmt.Errorf("%w: horizon grace %s: want a positive duration", ErrInvalidOption, grace)
		}
		d.horizonGrace = grace
		return nil
	}
}

// WithLagSampling sets how often [Dashboard.Start] samples the lag for
// the lag chart (default 30s) and how many samples it keeps in memory
// (default 240: two hours). The history is the running process's own: it
// starts empty at each start.
func WithLagSampling(every time.Duration, keep int) Option {
	return func(d *Dashboard) error {
		if every <= 0 || keep < 2 {
			return fmt.Errorf("%w: lag sampling every %s keeping %d: want a positive period and at least 2 samples", ErrInvalidOption, every, keep)
		}
		d.every, d.lag = every, newLagHistory(keep)
		return nil
	}
}

// New returns the dashboard of the passage state in db. It only reads
// unless [WithAdminToken] is given; reading never migrates or locks, so
// db may be opened read-only.
func New(db *sqlx.DB, opts ...Option) (*Dashboard, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: db must not be nil", ErrInvalidOption)
	}
	d := &Dashboard{db: db, clock: clockwork.NewRealClock(), loc: time.UTC, logger: slog.Default(),
		refresh: 10 * time.Second, every: 30 * time.Second, lag: newLagHistory(240), sessionTTL: 12 * time.Hour,
		bodyTimeout: defaultBodyTimeout, requestTimeout: defaultRequestTimeout, horizonGrace: horizonGrace}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(d); err != nil {
			return nil, err
		}
	}
	d.doneKey = make([]byte, 32)
	_, _ = rand.Read(d.doneKey) // never fails (crypto/rand)
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	d.pages = pages
	d.handler = d.checkHost(d.mount(d.routes()))
	return d, nil
}

// mount serves h under the base path (WithBasePath): the requests below
// it reach h with the prefix removed; the path itself redirects to its
// start page, and anything else is not the dashboard's.
func (d *Dashboard) mount(h http.Handler) http.Handler {
	if d.base == "" {
		return h
	}
	inner := http.StripPrefix(d.base, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == d.base:
			http.Redirect(w, r, d.base+"/", http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, d.base+"/"):
			inner.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.handler.ServeHTTP(w, r) }

// Start samples the lag every sampling period (see [WithLagSampling])
// until ctx ends or Stop is called; it returns at once. Without Start the
// lag chart stays empty: page views do not sample, so a burst of them
// cannot push the history out. Starting twice is harmless.
func (d *Dashboard) Start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stop != nil {
		return
	}
	ctx, d.stop = context.WithCancel(ctx)
	d.stopped = make(chan struct{})
	go func() {
		defer close(d.stopped)
		t := d.clock.NewTicker(d.every)
		defer t.Stop()
		for {
			d.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
			}
		}
	}()
}

// Stop ends the sampling Start began and waits for it, or for ctx.
// Stopping twice, or without Start, is harmless.
func (d *Dashboard) Stop(ctx context.Context) error {
	d.mu.Lock()
	stop, stopped := d.stop, d.stopped
	d.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sample records the lag now; a failed read records nothing (the next
// sample tries again).
func (d *Dashboard) sample(ctx context.Context) {
	st, err := ReadStatus(ctx, d.db, d.clock.Now(), d.loc)
	if err != nil {
		d.logger.Warn("dashboard: lag sample", "error", err)
		return
	}
	d.lag.add(lagOf(st))
}
