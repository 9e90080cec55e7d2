package natsjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/tick"
)

// Consumer reads the passage of time from a stream through a durable
// JetStream consumer and publishes each event, typed again
// (tick.MinuteHasPassed for <prefix>.minute, …, tick.TicksSkipped for
// skip reports), on a local bus: a service that runs no ticker then
// subscribes todolist.Handle[tick.MinuteHasPassed] and the rest unchanged.
// Messages on deeper subjects under the prefix (the schedule runs of
// "ticker run --nats", <prefix>.schedule.<name>) are not time: it acks
// them without a handler.
//
// A message reaches the handlers only if it is the event its subject
// names: a known unit, every field present, the boundary a boundary of
// the unit in the offset it carries, the emission not before it, the
// fields of a skip report consistent, and its Nats-Msg-Id the id the body
// makes. Anything else is poison (see PoisonReason): terminated, so that
// it neither comes back nor holds back the stream, counted by reason
// (Stats, and the metric of WithMeterProvider) and logged once with at
// most 1 KiB of its body. A domain event's JSON, a skip report on a
// minute's subject or JSON null never reach a handler as a minute at
// 0001-01-01, nor a Once handler's transaction.
//
// One message is in flight at a time, in stream order. It is acked once
// the local Publish returned nil — every handler succeeded — and the
// server has confirmed the ack. A failed Publish is negatively acked with
// a delay (WithRetryBackoff) and delivered again, and the messages after
// it wait: handlers see the stream in order, as a ticker's cursor would
// show it to them. While handlers run, the consumer tells the server
// every third of the ack wait that the message is in progress, so a slow
// handler keeps its message. Delivery is at least once: a consumer that
// dies after its handlers succeeded but before the ack gets the message
// again. Handlers whose effect must happen once record the message in an
// inbox, in their own transaction: see Once.
//
// The durable consumer's position lives on the server: a Consumer started
// again under the same durable name, in this process or another, goes on
// where the last one acked.
type Consumer struct {
	js      jetstream.JetStream
	prefix  string
	durable string
	local   tick.Publisher
	cfg     consumerConfig
	stats   consumerCounters
	tel     consumerTelemetry

	mu      sync.Mutex
	running bool
	iter    jetstream.MessagesContext
	cancel  context.CancelFunc // ends the handlers' context
	done    chan struct{}      // closed when the loop has returned
}

// NewConsumer returns a Consumer of the subjects under prefix, as the
// durable consumer durable, publishing to local (a *bus.Bus, or anything
// with its Publish). Nothing is asked of the server until Start.
func NewConsumer(js jetstream.JetStream, prefix, durable string, local tick.Publisher, opts ...ConsumerOption) (*Consumer, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: NewConsumer: nil JetStream", ErrInvalidOption)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	if durable == "" || strings.ContainsAny(durable, ".*> \t\r\n/\\") {
		return nil, fmt.Errorf("%w: NewConsumer: durable name %q must be non-empty, without dots, wildcards, white space or slashes", ErrInvalidOption, durable)
	}
	if local == nil {
		return nil, fmt.Errorf("%w: NewConsumer: nil local publisher", ErrInvalidOption)
	}
	cfg := consumerDefaults()
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: NewConsumer: nil option", ErrInvalidOption)
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	return &Consumer{js: js, prefix: prefix, durable: durable, local: local, cfg: cfg, tel: newConsumerTelemetry(cfg.meters, durable)}, nil
}

// Start creates the durable consumer on the stream storing prefix's
// subjects, or takes up the existing one, and starts handling messages on
// a goroutine of its own. It returns at once; its errors are those of the
// server's answers (no stream, an unreachable server). ctx's values reach
// the handlers; stop the consumer with Stop, not by cancelling ctx.
// Through a server restart or a lost connection the consumer waits and
// goes on once the client has reconnected; a connection closed for good
// ends it (logged), and a new Consumer on a new connection takes over
// under the same durable name.
func (c *Consumer) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return ErrAlreadyStarted
	}
	s, err := streamFor(ctx, c.js, c.prefix)
	if err != nil {
		return err
	}
	stream := s.CachedInfo().Config.Name
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       c.durable,
		Description:   "passage: the passage of time under " + c.prefix,
		FilterSubject: all(c.prefix),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.cfg.ackWait,
		// One message at a time: the next is not delivered before this
		// one is acked, so a failed one holds back those after it.
		MaxAckPending: 1,
		MaxDeliver:    -1,
	})
	if err != nil {
		return fmt.Errorf("natsjs: create consumer %s on stream %s %s: %w", c.durable, stream, where(c.js.Conn()), err)
	}
	// Pull requests that expire every 5 s, with a heartbeat every second:
	// a request the server lost while restarting (it took connections
	// before JetStream was back) is noticed by the missing heartbeats and
	// sent again within seconds, not after the client's default 30 s.
	iter, err := cons.Messages(jetstream.PullMaxMessages(1), jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second))
	if err != nil {
		return fmt.Errorf("natsjs: read consumer %s on stream %s: %w", c.durable, stream, err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.running, c.iter, c.cancel, c.done = true, iter, cancel, make(chan struct{})
	go c.loop(runCtx, iter, c.done)
	return nil
}

// Stop stops taking messages and waits for the one in hand, whose
// handlers finish and which is acked or not as they say. When ctx ends
// first, the handlers' context is cancelled and Stop returns ctx's error
// without waiting further. Stopping twice, or before starting, is
// harmless.
func (c *Consumer) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return nil
	}
	c.running = false
	iter, cancel, done := c.iter, c.cancel, c.done
	c.mu.Unlock()
	iter.Stop()
	select {
	case <-done:
		cancel()
		return nil
	case <-ctx.Done():
		cancel()
		return ctx.Err()
	}
}

// loop handles messages until the iterator is stopped or its connection
// closed.
func (c *Consumer) loop(ctx context.Context, iter jetstream.MessagesContext, done chan<- struct{}) {
	defer close(done)
	for {
		msg, err := iter.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			c.mu.Lock()
			stopped := !c.running
			c.mu.Unlock()
			if !stopped {
				// Not Stop: the connection was closed, or the durable
				// consumer deleted on the server.
				c.cfg.logger.Error("natsjs: consumer ended", "consumer", c.durable, "error", err)
			}
			return
		}
		if err != nil {
			// A missed heartbeat, a reconnect: the iterator goes on.
			c.cfg.logger.Warn("natsjs: consumer waits for messages", "consumer", c.durable, "error", err)
			continue
		}
		c.handle(ctx, msg)
	}
}

// handle publishes one message's event locally and acks it, or has it
// delivered again later.
func (c *Consumer) handle(ctx context.Context, msg jetstream.Msg) {
	m, err := describe(msg)
	if err != nil {
		c.cfg.logger.Error("natsjs: consumer cannot read a message", "consumer", c.durable, "error", err)
		_ = msg.Nak()
		return
	}
	// Bounded: a message's id and subject are whatever its publisher
	// sent.
	log := c.cfg.logger.With("consumer", c.durable, "message", cut(m.ID, maxSubjectLen), "subject", cut(m.Subject, maxSubjectLen), "delivered", m.Delivered)
	ev, err := decode(c.prefix, wire{subject: m.Subject, header: msg.Headers(), data: msg.Data()})
	if errors.Is(err, errNotTime) {
		// Another publisher's message on the stream (a schedule's run
		// from "ticker run --nats"): no handler of time wants it, and it
		// must not hold back the minutes after it.
		log.Debug("natsjs: consumer passes by a message that holds no time")
		if err := msg.Ack(); err != nil {
			log.Warn("natsjs: consumer could not ack a message it passed by", "error", err)
		}
		return
	}
	if err != nil {
		c.terminate(ctx, msg, log, err)
		return
	}
	stop := c.keepInProgress(msg, log)
	err = c.publish(withMessage(ctx, m), ev)
	stop()
	if err != nil {
		delay := c.cfg.backoff(m.Delivered)
		log.Warn("natsjs: handlers failed, the message comes back", "after", delay, "error", err)
		c.stats.failed.Add(1)
		if err := msg.NakWithDelay(delay); err != nil {
			// The ack wait brings it back instead.
			log.Error("natsjs: consumer could not nak a message", "error", err)
		}
		return
	}
	ackCtx, cancel := context.WithTimeout(ctx, c.cfg.ackWait)
	defer cancel()
	if err := msg.DoubleAck(ackCtx); err != nil {
		// The server delivers it again after the ack wait; handlers that
		// must not see it twice turn it away with their inbox (Once).
		log.Error("natsjs: consumer could not ack a handled message", "error", err)
		c.stats.ackFailures.Add(1)
		return
	}
	c.stats.handled.Add(1)
}

// terminate tells the server never to deliver msg again, for it is not
// the event its subject names (err, a *PoisonError): it would fail the
// same way at every delivery and hold back the messages after it for
// good. It is counted by reason and logged once, with at most 1 KiB of
// its body.
func (c *Consumer) terminate(ctx context.Context, msg jetstream.Msg, log *slog.Logger, err error) {
	reason := PoisonMalformed
	var p *PoisonError
	if errors.As(err, &p) {
		reason = p.Reason
	}
	c.stats.terminated.Add(1)
	c.stats.poison(reason).Add(1)
	c.tel.poison(ctx, reason)
	log.Error("natsjs: consumer terminates a message that is not the event its subject names",
		"reason", string(reason), "error", err, "size", len(msg.Data()), "excerpt", excerpt(msg.Data()))
	// Term, not TermWithReason: servers before 2.10 take "+TERM <reason>"
	// for no ack at all, and the message would hold the stream back.
	if err := msg.Term(); err != nil {
		// The ack wait brings it back, and it is terminated then.
		log.Error("natsjs: consumer could not terminate a message", "error", err)
	}
}

// publish calls the local publisher, turning a panic into an error: a
// publisher other than the bus (which recovers its handlers' panics) must
// not take the consumer's goroutine down with the message unacked.
func (c *Consumer) publish(ctx context.Context, ev any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("natsjs: local publish panicked: %v", r)
		}
	}()
	return c.local.Publish(ctx, ev)
}

// keepInProgress tells the server every third of the ack wait that msg is
// still being handled, until the returned stop is called. The server
// measures the ack wait on its own clock, which is real time, so this
// waits on real time too rather than on an injected clock.
func (c *Consumer) keepInProgress(msg jetstream.Msg, log *slog.Logger) (stop func()) {
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(c.cfg.ackWait / 3)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					log.Warn("natsjs: consumer could not extend a message's ack wait", "error", err)
					continue
				}
				c.stats.inProgress.Add(1)
			}
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}

// ConsumerStats counts what a Consumer did with its messages.
type ConsumerStats struct {
	// Handled counts messages whose handlers succeeded and whose ack the
	// server confirmed.
	Handled int64
	// Failed counts deliveries whose handlers failed, negatively acked.
	Failed int64
	// Terminated counts messages that were not the event their subject
	// names (poison), which the server was told never to deliver again.
	Terminated int64
	// Poison counts the terminated messages by reason; a reason none had
	// is absent.
	Poison map[PoisonReason]int64
	// AckFailures counts handled messages whose ack failed: they come back.
	AckFailures int64
	// InProgress counts the in-progress acks sent while handlers ran.
	InProgress int64
}

type consumerCounters struct {
	handled, failed, terminated, ackFailures, inProgress atomic.Int64
	byReason                                             [len(reasonOrder)]atomic.Int64
}

// poison is reason's counter.
func (s *consumerCounters) poison(reason PoisonReason) *atomic.Int64 {
	return &s.byReason[reasonIndex(reason)]
}

// Stats returns the consumer's counters.
func (c *Consumer) Stats() ConsumerStats {
	var poison map[PoisonReason]int64
	for _, r := range reasonOrder {
		if n := c.stats.poison(r).Load(); n > 0 {
			if poison == nil {
				poison = map[PoisonReason]int64{}
			}
			poison[r] = n
		}
	}
	return ConsumerStats{
		Poison:      poison,
		Handled:     c.stats.handled.Load(),
		Failed:      c.stats.failed.Load(),
		Terminated:  c.stats.terminated.Load(),
		AckFailures: c.stats.ackFailures.Load(),
		InProgress:  c.stats.inProgress.Load(),
	}
}
