package ordersvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/natsjs"
)

// run is a schedule run read from the stream: the body the time service
// publishes (timesvc.RunMessage), decoded on this side of the wire.
type run struct {
	SlotID   string    `json:"slot_id"`
	Schedule string    `json:"schedule"`
	Slot     time.Time `json:"slot"`
}

// ID is the run's identity, its slot id (also its Nats-Msg-Id): what the
// inbox records, so a run delivered again reports nothing twice.
func (r run) ID() string { return r.SlotID }

// reportsSchema is the table of the reports the orders-report schedule
// asks for: the effect that must happen once per run.
const reportsSchema = `CREATE TABLE IF NOT EXISTS order_reports (
	slot_id TEXT NOT NULL,
	slot    TEXT NOT NULL,
	pending INTEGER NOT NULL
)`

// reports consumes the time service's schedule runs through a durable
// consumer of its own, and writes a report for each exactly once: in the
// transaction that records the run in the inbox.
type reports struct {
	s    *service
	cc   jetstream.ConsumeContext
	once func(context.Context, run) error
	// wrote is set by the handler when it wrote a report in the current
	// delivery (not a redelivery turned away by the inbox), with what it
	// reported.
	wrote   bool
	pending int64
}

// startReports opens the inbox, creates (or takes up) the durable
// consumer of the runs under prefix and starts handling them.
func startReports(ctx context.Context, s *service, db *sqlx.DB, js jetstream.JetStream, prefix, durable string) (*reports, error) {
	if _, err := db.ExecContext(ctx, reportsSchema); err != nil {
		return nil, fmt.Errorf("create order_reports: %w", err)
	}
	inbox, err := natsjs.OpenInbox(ctx, db, natsjs.WithInboxClock(s.clock))
	if err != nil {
		return nil, err
	}
	r := &reports{s: s}
	r.once, err = natsjs.Once(inbox, durable, r.write)
	if err != nil {
		return nil, err
	}
	name, err := js.StreamNameBySubject(ctx, prefix+".>")
	if err != nil {
		return nil, fmt.Errorf("find the stream of %s.>: %w", prefix, err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable:       durable,
		FilterSubject: prefix + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		MaxAckPending: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s on stream %s: %w", durable, name, err)
	}
	// One message at a time (MaxAckPending 1, and Consume calls the
	// handler on one goroutine), so wrote needs no lock.
	r.cc, err = cons.Consume(func(msg jetstream.Msg) { r.handle(ctx, msg) })
	if err != nil {
		return nil, err
	}
	return r, nil
}

// handle writes one run's report, then acks it; a failure has it
// delivered again.
func (r *reports) handle(ctx context.Context, msg jetstream.Msg) {
	var rn run
	if err := json.Unmarshal(msg.Data(), &rn); err != nil || rn.SlotID == "" {
		r.s.printf("cannot read a run on %s, dropped: %v\n", msg.Subject(), err)
		_ = msg.Term()
		return
	}
	r.wrote = false
	if err := r.once(ctx, rn); err != nil {
		r.s.printf("%s  %s run %s failed, it comes back: %v\n", stamp(rn.Slot), rn.Schedule, rn.SlotID, err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	if !r.wrote {
		r.s.printf("%s  %s run %s was reported already\n", stamp(rn.Slot), rn.Schedule, rn.SlotID)
		_ = msg.DoubleAck(ctx)
		return
	}
	r.s.printf("%s  %s run: %d pending, reported once (slot id %s)\n", stamp(rn.Slot), rn.Schedule, r.pending, rn.SlotID)
	_ = msg.DoubleAck(ctx)
	r.s.reportWritten()
}

// write is the effect: one report row, in tx with the inbox's.
func (r *reports) write(ctx context.Context, tx *sqlx.Tx, rn run) error {
	stats, err := r.s.sys.Pending().Stats(ctx, r.s.clock.Now())
	if err != nil {
		return fmt.Errorf("count the pending orders: %w", err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO order_reports (slot_id, slot, pending) VALUES (?, ?, ?)`),
		rn.SlotID, rn.Slot.UTC().Format(time.RFC3339), stats.Pending); err != nil {
		return err
	}
	r.wrote, r.pending = true, int64(stats.Pending)
	return nil
}

// stop stops taking runs and waits, a while, for the one in hand.
func (r *reports) stop() error {
	r.cc.Drain()
	select {
	case <-r.cc.Closed():
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("the reports' consumer did not stop within 10 s")
	}
}
