// Package orchestration runs durable workflows: Go functions that charge
// a card, wait for shipping or three days, and refund if nothing came —
// across crashes, deploys and days of sleep — as a library on what passage
// already has. The history of an instance is one event stream; every
// durable delay is one to-do item woken by the passage of time.
//
// # The model
//
// A workflow is a function func(Context, I) (O, error), registered by name
// (Register) and started with a caller-chosen id (Start; starting an id
// twice is a no-op). An Engine's processor (Engine.Processor), driven by
// the passage of time like any to-do list's, replays each due instance:
//
//   - recorded answers come back at once: Context.Now and Context.NewID
//     return what was recorded, a Step returns its recorded result without
//     running again;
//   - the first call not recorded yet runs and is recorded: a Step runs its
//     side effect (at least once; StepInfo.Key is its idempotency key), with
//     retries by its RetryPolicy whose waits are durable delays, and
//     NonRetryable errors failing it at once;
//   - the first delay not over yet (Sleep, SleepUntil, Await's timeout, a
//     retry's wait) suspends the instance: the function gets ErrSuspended
//     (preallocated) and returns it, and the instance's to-do item moves to
//     the wake-up, in the transaction that appends what was recorded. A
//     delay that is already over continues at once, with no store round
//     trip. A lost wake-up costs nothing: the item stays due.
//
// Appends carry the stream's expected version, and the to-do list's claims
// keep an instance on one processor at a time, while any number of
// instances share the processors. Signals (Engine.Signal) append to the
// stream and make the instance due now; Await returns the oldest signal
// of a name not taken yet, or times out. A signal or a cancel request
// that lands while an execution runs does not contradict what it decided:
// what the execution recorded (a step's result above all) is appended
// after it, the step is not run again, and the instance wakes at once to
// see it. Only decisions recorded meanwhile by another execution make the
// write lose. Signal and Cancel refuse an instance that has ended
// (ErrFinished). Compensations registered with
// Compensate run in reverse when the function fails or is cancelled
// (Engine.Cancel): a saga.
//
// # Replay safety
//
// A replay that asks for something else than the history holds (a step
// renamed, a sleep added before a recorded step) leaves the instance Stuck
// with an error naming both; Engine.Replay checks recorded histories
// against new code before a deploy.
//
// To change a workflow under running instances, put the change behind
// Patched(ctx, id): instances that reach it after the deploy record a
// marker and take the new branch; those that passed it before replay the
// old one for as long as they run. Once none of those is left,
// DeprecatePatch(ctx, id) replaces the branch; once no running instance
// holds the marker, the call goes too. A marker the code no longer asks
// for, and an old branch an instance is noted to need, leave it stuck
// naming the patch, and Engine.Replay says so first (docs/workflows.md).
// The workflowcheck analyzer
// (orchestration/workflowcheck) flags time.Now, time.Sleep, math/rand, go
// statements and map ranges in workflow functions.
//
// # Observability
//
// An engine records metrics through the OpenTelemetry API
// (WithMeterProvider; the global provider by default, a no-op until the
// application installs an SDK): instances started, completed, failed,
// cancelled and stuck, and the lateness of wake-ups (a delay's end to
// the moment the function resumed past it), each by workflow name. They
// are counted when what they count is committed, so an execution that
// crashed or lost its write to another one counts nothing, and every
// transition counts once however often an instance is replayed.
//
// It traces through the same API (WithTracerProvider): an instance is one
// trace however long it sleeps. Start records its trace context (a W3C
// traceparent) in the history, and every later wake-up, in whatever
// process, is a span in that trace, linked to the tick that woke it,
// with a span per step it runs.
//
// # Storage
//
// An engine stores through the event store and a to-do list, whose drivers
// speak each database. Its own SQL is the inspection's (ReadHistory,
// ReadInstances, CountInstances): reads of the event store's table in SQL
// both databases speak, through the caller's *sqlx.DB or *sqlx.Tx, so it
// has no driver of its own; a statement one database needs differently
// would be the moment for one, as eventstore's driver.go shows.
package orchestration
