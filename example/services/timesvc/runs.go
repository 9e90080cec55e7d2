package timesvc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/schedule"
)

// RunMessage is the body of a schedule run on the stream: what the order
// service decodes. Its Nats-Msg-Id is SlotID.
type RunMessage struct {
	RunID    string    `json:"run_id"`
	SlotID   string    `json:"slot_id"`
	Schedule string    `json:"schedule"`
	Command  string    `json:"command"`
	Slot     time.Time `json:"slot"`
	FiredAt  time.Time `json:"fired_at"`
}

// runType marks the outbox records of schedule runs.
const runType = "schedule.run"

// recordRun is the schedule's Handler: it writes the run to the outbox in
// the transaction that records the run, so a run is published if and
// only if it committed, whatever crashes between.
func recordRun(ob *outbox.Outbox) schedule.Handler {
	return func(ctx context.Context, tx *sqlx.Tx, run schedule.Run) error {
		body, err := json.Marshal(RunMessage{
			RunID: run.RunID, SlotID: run.SlotID, Schedule: run.Schedule, Command: run.Command,
			Slot: run.Slot.UTC(), FiredAt: run.FiredAt.UTC(),
		})
		if err != nil {
			return err
		}
		return ob.WriteTx(ctx, tx, outbox.Record{Stream: "schedule/" + run.Schedule, Key: run.SlotID, Type: runType, Body: body})
	}
}

// runSink publishes the outbox's runs to <prefix>.<schedule>, for an
// outbox relay: after the server's ack, with the slot id as Nats-Msg-Id,
// so a run the relay publishes again (it died between the ack and its
// checkpoint) is stored once.
type runSink struct {
	js     jetstream.JetStream
	prefix string
	stream string

	mu sync.Mutex
	w  io.Writer
}

// Deliver is an outbox.Deliver.
func (s *runSink) Deliver(ctx context.Context, m outbox.Message) error {
	if m.Type != runType {
		return nil
	}
	var run RunMessage
	if err := json.Unmarshal(m.Body, &run); err != nil {
		return fmt.Errorf("decode run %s: %w", m.Key, err)
	}
	msg := nats.NewMsg(s.prefix + "." + run.Schedule)
	msg.Data = m.Body
	msg.Header.Set(jetstream.MsgIDHeader, m.Key)
	if _, err := s.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(s.stream)); err != nil {
		return fmt.Errorf("publish run %s to %s: %w", m.Key, msg.Subject, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "%s  %s run stored (slot id %s)\n", stamp(run.Slot), run.Schedule, run.SlotID)
	return nil
}
