package schedule

import (
	"errors"
	"fmt"
)

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

// The errors of Open and its options, each naming what was wrong. Those of
// the options wrap ErrInvalidSpec too, as they always have.
var (
	// ErrNilDB is returned by Open for a nil database.
	ErrNilDB = errors.New("schedule: open: db must not be nil")
	// ErrNilHandler is returned by Open for a nil Handler.
	ErrNilHandler = errors.New("schedule: open: handler must not be nil")
	// ErrWithClockNil is returned when the clock option is given nil.
	ErrWithClockNil = fmt.Errorf("%w: WithClock: clock must not be nil", ErrInvalidSpec)
	// ErrWithSkipsRecordedTxNil is returned when the option recording skip
	// reports in the firing transaction is given nil.
	ErrWithSkipsRecordedTxNil = fmt.Errorf("%w: WithSkipsRecordedTx: function must not be nil", ErrInvalidSpec)
	// ErrWithLiveWindowOutOfRange is returned when the live window option is
	// given a window that is not positive, or longer than the longest
	// interval; the error names the value.
	ErrWithLiveWindowOutOfRange = fmt.Errorf("%w: WithLiveWindow: the window must be positive and at most the longest interval", ErrInvalidSpec)
	// ErrWithMeterProviderNil is returned when the meter provider option
	// is given nil.
	ErrWithMeterProviderNil = fmt.Errorf("%w: WithMeterProvider: meter provider must not be nil", ErrInvalidSpec)
	// ErrWithTracerProviderNil is returned when the tracer provider option
	// is given nil.
	ErrWithTracerProviderNil = fmt.Errorf("%w: WithTracerProvider: tracer provider must not be nil", ErrInvalidSpec)
)
