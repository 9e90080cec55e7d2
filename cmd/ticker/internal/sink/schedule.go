package sink

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/schedule"
)

// RunRecord is one run of a stored schedule (type "ScheduleRun"). ID is
// the slot id, as is SlotID: every attempt of the same slot, on every
// replica, carries it, so a receiver deduplicates by it; RunID is fresh
// for every attempt. Slot and FiredAt are [Time]s, lossless like the
// tick records' instants.
//
// Its JSON form is its CloudEvent ([Event]): source
// natsjs.SourceSchedule, subject the schedule's name, time the slot, and
// data {"run_id", "slot_id", "schedule", "slot", "fired_at", "attempt",
// "manual", "command", "payload"}. It reads that form back, and the
// flat object of before the envelope.
type RunRecord struct {
	Type     string
	ID       string
	RunID    string
	SlotID   string
	Schedule string
	Slot     Time
	FiredAt  Time
	Attempt  int
	Manual   bool
	Command  string
	// Payload is the schedule's payload inline, raw JSON (compacted onto
	// the record's line); null when the schedule has none. A payload
	// that is not JSON (a schedule a program declared with other bytes;
	// "ticker schedule add" accepts only JSON) is sent as a JSON string
	// of its bytes instead of making the whole record unreadable.
	Payload json.RawMessage
}

// runData is a run's data, and, with type and id, its flat JSON of
// before the envelope.
type runData struct {
	RunID    string          `json:"run_id"`
	SlotID   string          `json:"slot_id"`
	Schedule string          `json:"schedule"`
	Slot     Time            `json:"slot"`
	FiredAt  Time            `json:"fired_at"`
	Attempt  int             `json:"attempt"`
	Manual   bool            `json:"manual"`
	Command  string          `json:"command"`
	Payload  json.RawMessage `json:"payload"`
}

// MarshalJSON writes r's CloudEvent.
func (r RunRecord) MarshalJSON() ([]byte, error) {
	payload := r.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	return marshalEvent(r.ID, natsjs.SourceSchedule, r.Type, r.Schedule, r.Slot.Time, runData{
		RunID: r.RunID, SlotID: r.SlotID, Schedule: r.Schedule, Slot: r.Slot, FiredAt: r.FiredAt,
		Attempt: r.Attempt, Manual: r.Manual, Command: r.Command, Payload: payload,
	})
}

// UnmarshalJSON reads a run's CloudEvent, or its flat JSON from before
// the envelope.
func (r *RunRecord) UnmarshalJSON(b []byte) error {
	ev, ok, err := readEvent(b)
	if err != nil {
		return fmt.Errorf("sink: read a run: %w", err)
	}
	data := b
	if ok {
		data = ev.Data
	} else if err := json.Unmarshal(b, &ev); err != nil { // type and id
		return fmt.Errorf("sink: read a run: %w", err)
	}
	var d runData
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("sink: read the data of run %s: %w", ev.ID, err)
	}
	*r = RunRecord{Type: ev.Type, ID: ev.ID, RunID: d.RunID, SlotID: d.SlotID, Schedule: d.Schedule, Slot: d.Slot,
		FiredAt: d.FiredAt, Attempt: d.Attempt, Manual: d.Manual, Command: d.Command, Payload: d.Payload}
	return nil
}

// NewRunRecord converts a schedule's run into its record.
func NewRunRecord(r schedule.Run) RunRecord {
	return RunRecord{
		Type: TypeScheduleRun, ID: r.SlotID, RunID: r.RunID, SlotID: r.SlotID, Schedule: r.Schedule,
		Slot: Time{Time: r.Slot}, FiredAt: Time{Time: r.FiredAt}, Attempt: r.Attempt, Manual: r.Manual,
		Command: r.Command, Payload: rawPayload(r.Payload),
	}
}

func rawPayload(p []byte) json.RawMessage {
	switch {
	case len(p) == 0:
		return json.RawMessage("null")
	case json.Valid(p):
		return json.RawMessage(p)
	}
	quoted, _ := json.Marshal(string(p)) // a string always marshals
	return quoted
}

// SlotsSkippedRecord is a schedule.SlotsSkipped report (type
// "SlotsSkipped"): slots of a schedule that its catch-up policy did not
// fire, From to To inclusive, Count of them.
//
// Its JSON form is its CloudEvent ([Event]): source
// natsjs.SourceSchedule, subject the schedule's name, time To, and data
// {"schedule", "from", "to", "count", "policy"}. It reads that form
// back, and the flat object of before the envelope.
type SlotsSkippedRecord struct {
	Type     string
	ID       string
	Schedule string
	From     Time
	To       Time
	Count    int64
	Policy   string
}

// slotsSkippedData is a skip report's data.
type slotsSkippedData struct {
	Schedule string `json:"schedule"`
	From     Time   `json:"from"`
	To       Time   `json:"to"`
	Count    int64  `json:"count"`
	Policy   string `json:"policy"`
}

// MarshalJSON writes s's CloudEvent.
func (s SlotsSkippedRecord) MarshalJSON() ([]byte, error) {
	return marshalEvent(s.ID, natsjs.SourceSchedule, s.Type, s.Schedule, s.To.Time,
		slotsSkippedData{Schedule: s.Schedule, From: s.From, To: s.To, Count: s.Count, Policy: s.Policy})
}

// UnmarshalJSON reads a skip report's CloudEvent, or its flat JSON from
// before the envelope.
func (s *SlotsSkippedRecord) UnmarshalJSON(b []byte) error {
	ev, ok, err := readEvent(b)
	if err != nil {
		return fmt.Errorf("sink: read a skip report: %w", err)
	}
	data := b
	if ok {
		data = ev.Data
	} else if err := json.Unmarshal(b, &ev); err != nil {
		return fmt.Errorf("sink: read a skip report: %w", err)
	}
	var d slotsSkippedData
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("sink: read the data of %s: %w", ev.ID, err)
	}
	*s = SlotsSkippedRecord{Type: ev.Type, ID: ev.ID, Schedule: d.Schedule, From: d.From, To: d.To, Count: d.Count, Policy: d.Policy}
	return nil
}

// NewSlotsSkippedRecord converts a skip report into its record.
func NewSlotsSkippedRecord(s schedule.SlotsSkipped) SlotsSkippedRecord {
	return SlotsSkippedRecord{
		Type:     TypeSlotsSkipped,
		ID:       fmt.Sprintf("slots-skipped/%s/%s..%s", s.Schedule, s.From.UTC().Format(time.RFC3339Nano), s.To.UTC().Format(time.RFC3339Nano)),
		Schedule: s.Schedule, From: Time{Time: s.From}, To: Time{Time: s.To}, Count: s.Count, Policy: s.Policy,
	}
}
