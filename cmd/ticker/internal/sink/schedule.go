package sink

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/schedule"
)

// RunRecord is the JSON form of one run of a stored schedule (type
// "ScheduleRun"). ID is the slot id, as is SlotID: every attempt of the
// same slot, on every replica, carries it, so a receiver deduplicates by
// it; RunID is fresh for every attempt. Slot and FiredAt are [Time]s,
// lossless like the tick records' instants.
type RunRecord struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	RunID    string `json:"run_id"`
	SlotID   string `json:"slot_id"`
	Schedule string `json:"schedule"`
	Slot     Time   `json:"slot"`
	FiredAt  Time   `json:"fired_at"`
	Attempt  int    `json:"attempt"`
	Manual   bool   `json:"manual"`
	Command  string `json:"command"`
	// Payload is the schedule's payload inline, raw JSON (compacted onto
	// the record's line); null when
	// the schedule has none. A payload that is not JSON (a schedule a
	// program declared with other bytes; "ticker schedule add" accepts
	// only JSON) is sent as a JSON string of its bytes instead of making
	// the whole record unreadable.
	Payload json.RawMessage `json:"payload"`
}

// NewRunRecord converts a schedule's run into its JSON form.
func NewRunRecord(r schedule.Run) RunRecord {
	return RunRecord{
		Type: "ScheduleRun", ID: r.SlotID, RunID: r.RunID, SlotID: r.SlotID, Schedule: r.Schedule,
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

// SlotsSkippedRecord is the JSON form of a schedule.SlotsSkipped report
// (type "SlotsSkipped"): slots of a schedule that its catch-up policy did
// not fire, From to To inclusive, Count of them.
type SlotsSkippedRecord struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Schedule string `json:"schedule"`
	From     Time   `json:"from"`
	To       Time   `json:"to"`
	Count    int64  `json:"count"`
	Policy   string `json:"policy"`
}

// NewSlotsSkippedRecord converts a skip report into its JSON form.
func NewSlotsSkippedRecord(s schedule.SlotsSkipped) SlotsSkippedRecord {
	return SlotsSkippedRecord{
		Type:     "SlotsSkipped",
		ID:       fmt.Sprintf("slots-skipped/%s/%s..%s", s.Schedule, s.From.UTC().Format(time.RFC3339Nano), s.To.UTC().Format(time.RFC3339Nano)),
		Schedule: s.Schedule, From: Time{Time: s.From}, To: Time{Time: s.To}, Count: s.Count, Policy: s.Policy,
	}
}
