// Package schedule runs recurring schedules that send commands: "every 8
// hours", "Fridays at 12:00 in Europe/Warsaw", a cron expression, an RFC
// 5545 rule, Easter Monday. A spec gives the instants ("slots") at which a
// schedule fires, as a one-method Spec (Next) that parsers return and that
// unions and exceptions compose; a Scheduler stores schedules and fires
// their slots through a to-do list, exactly once each.
//
// # Kinds of spec
//
//   - Every: fixed intervals, absolute durations from an anchor.
//   - Calendar: every N days, weeks, months or years; weekdays; the nth or
//     last weekday of the month; days of the month, with a stated choice
//     for the 31st in short months (ShortMonths); times of day; Count and
//     Until. Built as RFC 5545 rules.
//   - Cron: 5 or 6 fields and the @daily-style descriptors, read by
//     github.com/robfig/cron/v3; the day of week takes 7 for Sunday too.
//   - RRule: iCalendar recurrences (DTSTART with TZID, RRULE, RDATE,
//     EXDATE), expanded by github.com/teambition/rrule-go. An EXDATE in
//     UTC or another zone removes the occurrence at its instant, one in
//     DTSTART's zone the occurrence of its wall time, and one with
//     VALUE=DATE the occurrences of its date.
//   - Easter: Western or Orthodox Easter with a day offset (Good Friday,
//     Easter Monday).
//   - Union, Except and Dates: several specs as one; a holiday list or
//     rule that removes a date's slots.
//
// Parse reads the text forms the ticker's command line takes.
//
// # Stored schedules
//
// A Scheduler (Open) keeps schedules in a database — SQLite or
// PostgreSQL — and fires them. A schedule is a Definition: a name, a spec,
// a command and its payload, a catch-up policy and an end (MaxRuns,
// Until). Its state is one row (the definition's text and hash, runs,
// skipped slots, paused), and its next slot is one item of a to-do list,
// due at that slot. Nothing else wakes it: the to-do list's processor
// (Scheduler.Processor), driven by the passage of time like any other,
// finds the item due and fires it, level-triggered. Hence:
//
//   - Firing a slot is one transaction: record the run (its slot id — the
//     schedule's name and the slot's instant — is unique), hand the run to
//     the Handler with the transaction, and move the item to the following
//     slot. A handler error or a crash rolls all of it back, and the slot
//     is tried again, after a backoff, under the same slot id; a slot is
//     never recorded twice, on any number of replicas. The slots of a
//     batch due together fire set-wise, in one transaction and a handful
//     of statements whatever the batch's size; when one of them fails,
//     the batch is undone and fired again slot by slot, each under a
//     savepoint, so that the failure undoes its own slot only.
//   - A wake-up that comes early finds nothing due and changes nothing;
//     the next one fires the slot. A late, lost or doubled wake-up costs
//     nothing either.
//   - Sync at every start stores new schedules, leaves unchanged ones
//     exactly as they are (their next slot neither fires again nor moves),
//     and reprograms changed ones from now: "every hour" replaces "every 8
//     hours" at once.
//   - Every run has a fresh run id and the deterministic slot id.
//   - Slots that passed while nothing fired them follow the ticker's
//     catch-up policies (tick.All, tick.LatestOnly — the default —,
//     tick.Skip); what is not fired is counted and published as
//     SlotsSkipped, never silent.
//   - Pause, Resume, Trigger (a run now, outside the plan, with its own
//     id) and Delete change a schedule in one transaction each; Backfill
//     runs the slots of a range that have no run yet; PruneRuns deletes
//     the runs recorded before a time, which nothing else does.
//   - A handler hands its command over inside the firing transaction and
//     returns; one that hands it to work that goes on returns
//     ErrStillRunning, and Finish closes the run later. While a run is
//     open, the Overlap policy decides: fire anyway (AllowOverlap), skip
//     and report the slot (SkipOverlap), or keep it and fire it when the
//     run finishes (BufferOne).
//   - Jitter delays each slot by an offset derived from its slot id, the
//     same on every replica and restart, to spread schedules that share
//     their slots.
//
// Each database is a driver: the scheduler's logic calls an unexported
// interface (driver.go) and holds no SQL; the statements both databases
// share are in sql.go, SQLite's own in driver_sqlite.go, PostgreSQL's
// (unnest joins, arrays, row locks, chunk sizes) in driver_postgres.go,
// and one conformance test runs the same contract against both; the
// layout and why, docs/design.md.
//
// A schedule this process declared fires by its Spec; one declared
// elsewhere fires by its stored text, which Parse must read back
// (intervals, cron, RFC 5545 rules and calendars do; Easter, unions and
// exceptions must be declared by the process that fires them).
//
// # Zones and daylight saving
//
// Each kind resolves a local time that a zone skips or repeats by its own
// standard, as tested in TestDSTTable (Europe/Warsaw: 2026-03-29 02:00 →
// 03:00, 2026-10-25 03:00 → 02:00):
//
//	spec                     local time in the gap (02:30)      local time shown twice (02:30)
//	Every 30m                absolute: 00:30, 01:30 UTC …       both passes (absolute)
//	Calendar, RRule, Easter  offset before the gap: 03:30 CEST  first occurrence: 02:30 CEST
//	Cron, fixed hour         first instant after the gap: 03:00 first occurrence: 02:30 CEST
//	Cron, hour * or */n      not shown by the clock: no slot    both passes: 02:30 CEST, 02:30 CET
//
// Fixed intervals are absolute durations, indifferent to DST. Cron's
// custom (Vixie cron) is that a job with a fixed hour runs once on a DST
// day, while one whose hour is an interval follows the wall clock.
//
// # Telemetry
//
// A Scheduler records metrics and traces through the OpenTelemetry API
// (telemetry.go, tracing.go), never an SDK: the global providers by
// default, others by WithMeterProvider and WithTracerProvider; with none
// installed, recording is a no-op that allocates nothing.
// passage.schedule.runs.fired and passage.schedule.runs.skipped count the
// runs this process committed and the slots it reported skipped, each
// slot once; passage.schedule.run.lateness measures from a slot's due
// time (the slot plus its jitter) to its handler's start. Their one
// attribute is the schedule's name, which WithMetricsPerSchedule(false)
// leaves out for deployments of many thousands of schedules. Each run's
// handler runs in a span "schedule.run <name>", linked to the span of the
// tick that fired it (through the to-do list's batch span, when the list
// traces its batches).
package schedule
