package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
)

// scheduleRun is a ScheduleRun line as a receiver reads it.
type scheduleRun struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	RunID    string          `json:"run_id"`
	SlotID   string          `json:"slot_id"`
	Schedule string          `json:"schedule"`
	Slot     sink.Time       `json:"slot"`
	FiredAt  sink.Time       `json:"fired_at"`
	Attempt  int             `json:"attempt"`
	Manual   bool            `json:"manual"`
	Command  string          `json:"command"`
	Payload  json.RawMessage `json:"payload"`
	Raw      string          `json:"-"`
}

// UnmarshalJSON reads a ScheduleRun's CloudEvent (docs/events.md): type
// and id from the envelope, the run's fields from its data.
func (r *scheduleRun) UnmarshalJSON(b []byte) error {
	type fields scheduleRun
	var ev struct {
		Type string          `json:"type"`
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	}
	var f fields
	if err := json.Unmarshal(b, &ev); err != nil {
		return err
	}
	if err := json.Unmarshal(ev.Data, &f); err != nil {
		return err
	}
	*r = scheduleRun(f)
	r.Type, r.ID = ev.Type, ev.ID
	return nil
}

// scheduleRuns picks the ScheduleRun lines out of JSON lines, checking
// that each follows the minute whose boundary fired it.
func scheduleRuns(t *testing.T, out string) []scheduleRun {
	t.Helper()
	return pickRuns(t, out, true)
}

// pickRuns is scheduleRuns, with the check only when onMinutes: "run
// --once" also fires what is due between the last minute and now.
func pickRuns(t *testing.T, out string, onMinutes bool) []scheduleRun {
	t.Helper()
	var runs []scheduleRun
	for line := range strings.Lines(out) {
		var head struct {
			Type     string     `json:"type"`
			Boundary *sink.Time `json:"boundary"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &head), line)
		switch head.Type {
		case "ScheduleRun":
			var r scheduleRun
			require.NoError(t, json.Unmarshal([]byte(line), &r), line)
			r.Raw = line
			// Runs and minutes are streams of their own: a run may
			// reach a sink before its minute, never before its slot.
			if onMinutes && !r.Manual {
				require.False(t, r.FiredAt.Before(r.Slot.Time), "%s fired before its slot", r.SlotID)
			}
			runs = append(runs, r)
		}
	}
	return runs
}

// slotIDs counts the runs of each slot id.
func slotIDs(runs []scheduleRun) map[string]int {
	ids := map[string]int{}
	for _, r := range runs {
		ids[r.SlotID]++
	}
	return ids
}

// scheduleOn returns a runner of "ticker schedule VERB --db db ARGS…" on
// clock: the subcommand first, then the database, then the rest.
func scheduleOn(t *testing.T, clock clockwork.Clock, db string) func(args ...string) result {
	return func(args ...string) result {
		return run(t, clock, nil, append([]string{"schedule", args[0], "--db", db}, args[1:]...)...)
	}
}

// countRuns counts the runs the database holds.
func countRuns(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM schedule_runs`))
	return n
}

// requireRunsInDB checks that the database holds a run of each run id.
func requireRunsInDB(t *testing.T, dsn string, runIDs ...string) {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer db.Close()
	for _, id := range runIDs {
		var n int
		require.NoError(t, db.GetContext(context.Background(), &n, db.Rebind(`SELECT COUNT(*) FROM schedule_runs WHERE run_id = ?`), id))
		require.Equal(t, 1, n, "run %s is in the database", id)
	}
}
