package schedule

import "errors"

// ErrInvalidSpec is returned for a spec that cannot be built; the message
// names the part that is wrong (a cron field, an RRULE property, an option
// and its value).
var ErrInvalidSpec = errors.New("schedule: invalid spec")

// ErrUnknownSchedule is returned for a name no schedule has.
var ErrUnknownSchedule = errors.New("schedule: unknown schedule")

// ErrUnknownRun is returned by Finish for a run id no run has.
var ErrUnknownRun = errors.New("schedule: unknown run")

// ErrStillRunning is what a Handler returns when it handed the run over
// to work that goes on after it returns (a job queue, another service):
// the run is recorded and its slot done, but the run stays open until
// Scheduler.Finish is called with its run id. Overlap policies look at
// open runs. It is not a failure.
var ErrStillRunning = errors.New("schedule: run still running")

// The errors of Open, each naming what was wrong; those of its options
// are with the options (options.go).
var (
	// ErrNilDB is returned by Open for a nil database.
	ErrNilDB = errors.New("schedule: open: db must not be nil")
	// ErrNilHandler is returned by Open for a nil Handler.
	ErrNilHandler = errors.New("schedule: open: handler must not be nil")
)
