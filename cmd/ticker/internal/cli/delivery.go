package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/metric"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// Delivery in "ticker run": what the ticker and the scheduler decide is
// written to the outbox in the deciding transaction, and one relay per
// sink delivers it after the commit (see the outbox package). Nothing is
// posted from inside a transaction.
const (
	// relayPoll is how often a relay looks for records when no commit of
	// this process woke it (another process's trigger, a horizon that
	// held a record back).
	relayPoll = time.Second
	// relayParallel bounds the streams a webhook's relay delivers at once.
	relayParallel = 16
	// relayBackoffMax is what the wait after a refusal doubles up to,
	// unless --webhook-backoff is longer.
	relayBackoffMax = 10 * time.Second
	// drainTimeout bounds the delivery at the end of "run --once",
	// "run --until", "schedule trigger" and "schedule backfill", and at
	// the stop of "run".
	drainTimeout = 30 * time.Second
	// deliveryLagLimit is how old a sink's oldest pending record may be
	// before /healthz reports delivery as behind.
	deliveryLagLimit = 5 * time.Minute
)

// sender is one sink: its name (the relay's checkpoints' key, stable
// across restarts) and how it sends a stored record.
type sender struct {
	name     string
	send     func(ctx context.Context, key, typ string, body []byte) error
	parallel int
	close    func() // nil, or what closes its connection (closeSenders)
}

// webhookName names a webhook's sink: its URL without password or query,
// which may hold tokens, and a hash of the whole URL, which tells apart
// URLs that differ only there.
func webhookName(hook *sink.Webhook, raw string) string {
	sum := sha256.Sum256([]byte(raw))
	shown := hook.URL()
	if len(shown) > 200 {
		shown = shown[:200] + "…"
	}
	return "webhook " + shown + " #" + hex.EncodeToString(sum[:4])
}

// relay is one sink's relay, with what /metrics and /healthz show of it.
type relay struct {
	name string
	r    *outbox.Relay
	wake chan struct{}

	// late records a delivery's lateness (metrics.watchRelays; nil
	// records nothing), lateMax the largest, in seconds.
	late    func(time.Duration)
	mu      sync.Mutex
	lateMax float64

	// failing: a database failure was logged, and no read worked since
	// (onError); seen is the relay's counts at the last look (recovered,
	// called by its one supervising goroutine).
	failing atomic.Bool
	seen    outbox.Stats
}

// delivery is the outbox of "ticker run" and its relays.
type delivery struct {
	db     *sqldb.DB
	box    *outbox.Outbox
	clock  clockwork.Clock
	logger *slog.Logger
	relays []*relay
	// horizon names a PostgreSQL transaction holding the relays back
	// (horizon.go); nil on SQLite, or set by "ticker run" alone.
	horizon *horizon
	// retention is how long the records every sink passed are kept
	// (--outbox-retention, retention.go); 0, the other commands', never
	// prunes.
	retention time.Duration
}

// retries is how a relay retries a record a sink refused: after backoff,
// doubled up to 10 s (or backoff if longer), parked after attempts
// refusals (--webhook-backoff, --webhook-attempts).
type retries struct {
	backoff  time.Duration
	attempts int
}

// deliveryOption adds to what openDelivery opens ("ticker run"'s).
type deliveryOption func(box *[]outbox.Option, relay *[]outbox.RelayOption)

// startingFrom starts every sink new to the database where from says
// (--from).
func startingFrom(from outbox.From) deliveryOption {
	return func(_ *[]outbox.Option, relay *[]outbox.RelayOption) {
		*relay = append(*relay, outbox.WithFrom(from))
	}
}

// meteredBy records the outbox's gauges (its size, its oldest record's
// age) on the command's own provider, as tick's and schedule's: each
// command (each parallel test) counts alone.
func meteredBy(mp metric.MeterProvider) deliveryOption {
	return func(box *[]outbox.Option, _ *[]outbox.RelayOption) {
		*box = append(*box, outbox.WithMeterProvider(mp))
	}
}

// openDelivery opens the outbox of db and a relay per sink, retrying as
// retry says.
func openDelivery(ctx context.Context, db *sqldb.DB, senders []sender, retry retries, clock clockwork.Clock, logger *slog.Logger, with ...deliveryOption) (*delivery, error) {
	backoff, attempts := retry.backoff, retry.attempts
	boxOpts, relayOpts := []outbox.Option{outbox.WithClock(clock)}, []outbox.RelayOption(nil)
	for _, w := range with {
		w(&boxOpts, &relayOpts)
	}
	box, err := outbox.Open(ctx, db.DB, boxOpts...)
	if err != nil {
		return nil, fmt.Errorf("open the outbox: %w", err)
	}
	d := &delivery{db: db, box: box, clock: clock, logger: logger}
	for _, s := range senders {
		rl := &relay{name: s.name, wake: make(chan struct{}, 1)}
		send := s.send
		deliver := func(ctx context.Context, m outbox.Message) error {
			return send(requestsOf(ctx), m.Key, m.Type, m.Body)
		}
		rl.r, err = outbox.NewRelay(box, s.name, deliver, append([]outbox.RelayOption{
			outbox.WithParallel(s.parallel),
			outbox.WithPoll(relayPoll),
			outbox.WithBackoff(backoff, max(backoff, relayBackoffMax)),
			outbox.WithMaxAttempts(attempts),
			outbox.WithObserver(rl.observer(logger))}, relayOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("relay to %s: %w", s.name, err)
		}
		d.relays = append(d.relays, rl)
	}
	return d, nil
}

// observer counts a relay's lateness, logs each refusal once, with its
// next attempt, each parked record, and where a new sink started.
func (rl *relay) observer(logger *slog.Logger) outbox.Observer {
	return outbox.Observer{
		Started: rl.started(logger),
		Delivered: func(_ outbox.Message, late time.Duration) {
			if rl.late != nil {
				rl.late(late)
			}
			rl.mu.Lock()
			defer rl.mu.Unlock()
			rl.lateMax = max(rl.lateMax, late.Seconds())
		},
		Refused: func(m outbox.Message, err error, next time.Time) {
			// Once per record: a receiver down for an hour would otherwise
			// log every retry of every record behind it. The later
			// refusals are counted (passage_delivery_records_refused_total).
			if m.Attempt == 1 {
				logger.Warn("delivery refused; retried with backoff under the same key (further refusals of it are counted, not logged)",
					"sink", rl.name, "key", m.Key, "type", m.Type, "next_attempt", next, "err", err)
			}
		},
		Parked: func(m outbox.Message, err error) {
			logger.Error("delivery refused too often; the record is parked (ticker status and /metrics show it)",
				"sink", rl.name, "key", m.Key, "type", m.Type, "attempts", m.Attempt, "err", err)
		},
	}
}

// started logs where a sink new to the database started, once, when
// that says something: the records it leaves behind, or where --from
// put it. A sink the database knows resumes without a word, and so does
// a new one starting now on an outbox holding nothing older (a first
// run): there is nothing to tell.
func (rl *relay) started(logger *slog.Logger) func(outbox.Origin) {
	return func(o outbox.Origin) {
		if o.Resumed || o.From == outbox.FromNow && o.Skipped == 0 {
			return
		}
		args := []any{"sink", rl.name, "from", o.From.String()}
		if !o.At.IsZero() {
			args = append(args, "at", o.At)
		}
		args = append(args, "after_record", o.After, "not_delivered", o.Skipped)
		msg := "a sink new to the database starts here; it is not offered the records before it (--from beginning would)"
		if o.From == outbox.FromBeginning {
			msg = "a sink new to the database starts from the oldest record held (--from beginning)"
		}
		logger.Info(msg, args...)
	}
}

// notify wakes every relay: records committed. A running relay reads
// at once (Notify); one waiting for the lease looks whether this process
// holds it now (follow).
func (d *delivery) notify() {
	for _, rl := range d.relays {
		rl.r.Notify()
		select {
		case rl.wake <- struct{}{}:
		default:
		}
	}
}

// write records events (a tick.Event, a tick.TicksSkipped, a
// schedule.Run, a schedule.SlotsSkipped) in tx, for delivery after it
// commits.
func (d *delivery) write(ctx context.Context, tx sqlx.ExtContext, events ...any) error {
	records := make([]outbox.Record, 0, len(events))
	for _, e := range events {
		body, env, err := sink.Marshal(e)
		if err != nil {
			return err
		}
		records = append(records, outbox.Record{Stream: streamOf(e), Key: env.ID, Type: env.Type, Body: body})
	}
	return d.box.WriteTx(ctx, tx, records...)
}

// streamOf is what orders a record: its unit of time, or its schedule.
func streamOf(e any) string {
	switch e := e.(type) {
	case tick.Event:
		return string(e.Unit())
	case tick.TicksSkipped:
		return string(e.Unit)
	case schedule.Run:
		return "schedule/" + e.Schedule
	case schedule.SlotsSkipped:
		return "schedule/" + e.Schedule
	}
	return "other"
}

// Publish implements tick.Publisher for the ticker's own events: each is
// written to the outbox in a short transaction of its own (a boundary
// offered again is there already and not written twice), and the relays
// are woken once it committed.
func (d *delivery) Publish(ctx context.Context, events ...any) error {
	for _, e := range events {
		// One statement, committed on its own.
		if err := d.write(ctx, d.db.DB, e); err != nil {
			return fmt.Errorf("record %T in the outbox: %w", e, err)
		}
	}
	d.notify()
	return nil
}

// run delivers until stopping is closed, each relay on a goroutine of
// its own, only while holds says this process holds the ticker's lease:
// a standby delivers nothing, and takes over from the checkpoints when it
// takes the lease. Each relay delivers through Relay.Run, every stream on
// its own (a receiver stalled on one record holds that stream and one
// request, not the others), and Pass is left to the drains. Stopping
// starts no more requests, and those in flight get their answers: what
// the sink took is recorded and not offered again. ctx ending cuts them
// short (the stop's deadline). It returns once every relay has stopped.
func (d *delivery) run(ctx context.Context, stopping <-chan struct{}, holds func() bool) {
	var wg sync.WaitGroup
	for _, rl := range d.relays {
		wg.Go(func() { d.follow(ctx, stopping, rl, holds) })
	}
	// A holder of the horizon is logged on every replica, the standbys
	// included: it holds back whichever delivers.
	wg.Go(func() { d.horizon.watch(ctx, stopping) })
	if d.retention > 0 {
		wg.Go(func() { d.pruneWhileHeld(ctx, stopping, holds) })
	}
	wg.Wait()
}

// follow runs rl's relay whenever this process holds the lease, and
// waits for it otherwise: it looks at every commit of this process
// (rl.wake) and at every poll, in real time — a standby takes the lease
// on its own ticker's pass, and a lease is a matter of the database.
func (d *delivery) follow(ctx context.Context, stopping <-chan struct{}, rl *relay, holds func() bool) {
	poll := time.NewTicker(relayPoll)
	defer poll.Stop()
	for {
		if holds() && !d.deliverWhileHeld(ctx, stopping, rl, holds, poll.C) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-rl.wake:
		case <-poll.C:
		}
	}
}

// deliverWhileHeld runs rl's relay until the lease is lost (it returns
// true: follow waits to hold it again) or the run stops (false). The
// relay's context ends then, so it offers nothing more; a request in
// flight is not cut short by it (requestsOf): it gets its answer, and
// what the sink took is recorded before Run returns. Only ctx ending
// (the stop's bound) cuts requests short.
//
// The lease counts as lost when it is not held at two polls in a row: a
// single reading can fall between a jump of the ticker's clock (a
// machine waking from suspend, a test's fake clock) and the pass that
// renews the lease, and losing it for nothing would wait out every
// request in flight, a stalled one included, before delivering again.
// A lease really lost stays lost; the second poll costs a second of
// overlap with the new holder, which the outbox tolerates (delivered at
// least once, never skipped).
func (d *delivery) deliverWhileHeld(ctx context.Context, stopping <-chan struct{}, rl *relay, holds func() bool, poll <-chan time.Time) bool {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rl.r.Run(withRequests(runCtx, ctx), rl.onError(d.logger))
	}()
	notHeld := 0
	for lost := false; !lost; {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			return false
		case <-stopping:
			cancel()
			<-done
			return false
		case <-rl.wake: // notify told the relay itself
		case <-poll:
			rl.recovered()
			if holds() {
				notHeld = 0
			} else {
				notHeld++
			}
			lost = notHeld >= 2
		}
	}
	cancel()
	select {
	case <-done:
		return true
	case <-stopping: // the requests in flight finish all the same
		<-done
		return false
	case <-ctx.Done():
		<-done
		return false
	}
}

// requestsKey marks the context Run passes to a sink with the context
// its request is to honour (withRequests).
type requestsKey struct{}

// withRequests returns runCtx carrying requests: a Deliver called with
// it sends its request under requests (requestsOf), so the relay's end
// (runCtx: a stop, a lease lost) lets the requests in flight finish, and
// only requests' end (the stop's bound) cuts them short.
func withRequests(runCtx, requests context.Context) context.Context {
	return context.WithValue(runCtx, requestsKey{}, requests)
}

// requestsOf is the context a delivery's request honours: the one
// withRequests set, or ctx itself (a pass, whose caller bounds it).
func requestsOf(ctx context.Context) context.Context {
	if r, ok := ctx.Value(requestsKey{}).(context.Context); ok {
		return r
	}
	return ctx
}

// onError logs a relay's failed database operation once while they
// fail: a database down for an hour would otherwise log one at every
// poll. They are all counted (passage_delivery_pass_failures_total), and
// the next is logged again once a read worked (recovered).
func (rl *relay) onError(logger *slog.Logger) func(error) {
	return func(err error) {
		if rl.failing.CompareAndSwap(false, true) {
			logger.Error("delivery failed on the database; retried at the next poll (further failures are counted, not logged, until it works again)", "sink", rl.name, "err", err)
		}
	}
}

// recovered clears the failing state once the relay read the outbox
// without a failure since the last look.
func (rl *relay) recovered() {
	s := rl.r.Stats()
	if s.Passes > rl.seen.Passes && s.Failed == rl.seen.Failed {
		rl.failing.Store(false)
	}
	rl.seen = s
}

// drained is what a drain delivered and left, summed over the sinks.
type drained struct {
	delivered, parked int
	left, waiting     int // pending at the end; of them, refused and waiting for a retry
	// bounded: the drain reached its time bound; signalled: it stopped
	// for a signal. Either leaves what is pending for the next run (or
	// the next holder of the lease); neither is a failure.
	bounded, signalled bool
	errs               []error
}

// drain delivers what is committed, relay by relay, until nothing more
// is pending or only what waits for a retry after a refusal (and what
// waits behind it) is: that is left for the next run. A record the
// relay cannot read yet (PostgreSQL: an older transaction still runs)
// is waited for. The whole drain is bounded by timeout and by ctx's
// deadline, if it has one. ctx's cancellation (a signal) does not cut a
// pass short — its requests get their answers, or the sink's own
// timeout, so nothing taken is offered again — but no pass starts after
// it.
func (d *delivery) drain(ctx context.Context, timeout time.Duration) drained {
	pctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		pctx, cancelDeadline = context.WithDeadline(pctx, dl)
		defer cancelDeadline()
	}
	pctx, cancel := context.WithTimeout(pctx, timeout)
	defer cancel()
	var out drained
	stop := func() bool {
		switch {
		case pctx.Err() != nil:
			out.bounded = true
		case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
			out.signalled = true
		default:
			return false
		}
		return true
	}
	for _, rl := range d.relays {
		for !stop() {
			res, err := rl.r.Pass(pctx)
			out.delivered += res.Delivered
			out.parked += res.Parked
			if err != nil {
				if !stop() {
					out.errs = append(out.errs, err)
				}
				break
			}
			if res.More || res.Delivered+res.Parked > 0 {
				continue
			}
			b, err := rl.r.Backlog(pctx)
			if err != nil {
				if !stop() {
					out.errs = append(out.errs, err)
				}
				break
			}
			if b.Pending == 0 || b.Waiting > 0 {
				break
			}
			// Committed, not readable yet: the horizon is a matter of the
			// database's transactions, waited for in real time.
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-pctx.Done():
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		bctx, cancelBacklog := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if b, err := rl.r.Backlog(bctx); err == nil {
			out.left += b.Pending
			out.waiting += b.Waiting
		}
		cancelBacklog()
	}
	return out
}

// total is what every relay of d delivered and parked since it opened,
// by Pass or Run.
func (d *delivery) total() outbox.Stats {
	var t outbox.Stats
	for _, rl := range d.relays {
		s := rl.r.Stats()
		t.Delivered += s.Delivered
		t.Parked += s.Parked
	}
	return t
}

// leftover says how many records every sink has yet to take, for the
// line a stopping command prints ("" when that cannot be read).
func (d *delivery) leftover(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	left := 0
	for _, rl := range d.relays {
		b, err := rl.r.Backlog(ctx)
		if err != nil {
			return ""
		}
		left += b.Pending
	}
	if left == 0 {
		return "nothing left in the outbox"
	}
	return fmt.Sprintf("%s left in the outbox (the next run, or the next holder of the lease, delivers them)", plural(left, "record", "records"))
}

// summary says what a drain did, for the stderr line of a run-once
// command.
func (o drained) summary() string {
	s := fmt.Sprintf("delivered %s", plural(o.delivered, "record", "records"))
	if o.parked > 0 {
		s += fmt.Sprintf(", parked %d", o.parked)
	}
	if o.left > 0 {
		s += fmt.Sprintf(", %d left in the outbox", o.left)
		switch {
		case o.signalled:
			s += " (stopped by a signal: the next run, or the next holder of the lease, delivers them)"
		case o.bounded:
			s += " (delivery reached its time bound: the next run, or the next holder of the lease, delivers them)"
		case o.waiting > 0:
			s += fmt.Sprintf(" (%d refused, retried with their streams by the next run)", o.waiting)
		}
	}
	if len(o.errs) > 0 {
		msgs := make([]string, len(o.errs))
		for i, err := range o.errs {
			msgs[i] = err.Error()
		}
		s += " (delivery failed: " + strings.Join(msgs, "; ") + ")"
	}
	return s
}

// err is the drain's failure (the database, not a sink), if any.
func (o drained) err() error { return errors.Join(o.errs...) }

// health is nil while delivery keeps up: no sink's oldest pending
// record was recorded more than deliveryLagLimit ago. That covers a
// receiver that refuses (its records wait behind the refusal until parked)
// and one too slow for what is recorded. It is read from the database, so
// every replica reports the truth of the one that delivers. Parked
// records do not degrade it (they stay parked until someone acts, and a
// health check that never recovers gets the process restarted for
// nothing): /metrics counts them (passage_delivery_parked) and the log
// names each.
func (d *delivery) health(ctx context.Context) error {
	now := d.clock.Now()
	for _, rl := range d.relays {
		b, err := rl.r.Backlog(ctx)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		if b.Pending > 0 && now.Sub(b.Oldest) > deliveryLagLimit {
			return fmt.Errorf("delivery: %s is behind: %s pending, the oldest recorded %v ago at %s (limit %v), %d refused and waiting for a retry",
				rl.name, plural(b.Pending, "record", "records"), now.Sub(b.Oldest).Round(time.Second), timefmt.Format(b.Oldest), deliveryLagLimit, b.Waiting)
		}
	}
	return nil
}
