// Package tick publishes the passage of time as domain events:
// MinuteHasPassed, HourHasPassed, DayHasPassed, WeekHasPassed,
// MonthHasPassed, QuarterHasPassed and YearHasPassed, so that a handler
// reacts to "a day has passed" exactly as it reacts to "an order was
// placed". Every event implements Event; (unit, boundary) is its identity.
//
// # Boundaries
//
// Next, Previous and Boundaries compute boundaries by calendar arithmetic
// in a *time.Location: a day is the first instant of each local date (where
// a DST jump skips midnight, the first instant after the gap), an hour is each instant the wall clock shows
// HH:00 (a repeated fall-back hour passes twice, a skipped one never), and
// week (ISO, Monday), month, quarter and year begin at the first instant of
// the local period.
//
// # The Ticker
//
// A Ticker (New, Start, Stop) is woken by a gocron/v2 scheduler at the
// nearest boundary of its units, on an injected clockwork.Clock. gocron only
// wakes it: a durable cursor per unit (CursorStore: NewMemoryStore,
// NewSQLStore) decides what to emit. Each wake-up publishes the boundaries in
// (cursor, now] through a Publisher — the signature of the bus's Publish —
// and advances the cursor with compare-and-swap, so that:
//
//   - after downtime the unit's CatchUp policy (All, LatestOnly, Skip)
//     decides what is emitted late, each such event marked CatchUp, and
//     what it leaves out is published as a TicksSkipped and counted,
//     once: the cursor passes the skipped boundaries right after the report,
//     so a retry after a failed publish does not report them again;
//   - a publish or store error leaves the cursor on the last published
//     boundary; the failed one is retried after a backoff (WithRetryBackoff)
//     or at the next boundary, whichever is sooner (at-least-once), and the
//     failure is counted (Stats) and reported (Observer), and Health
//     says what failed and since when until a pass succeeds again;
//   - a clock going backwards emits nothing twice;
//   - with WithLease, replicas sharing a SQL store elect one emitter through
//     a lease with a fencing term, renewed every third of its ttl — also
//     while a publish runs, however long it takes — and checked before
//     every publish; a holder that cannot renew has its publish's context
//     cancelled (cause ErrLeaseLost) and publishes nothing more, a stale
//     leader's cursor write fails, and Stop releases the lease for the
//     next replica — also after
//     EmitDue or EmitUntil on a ticker never started. Each replica needs
//     its own holder id: NewHolderID adds a random part to host and pid,
//     which repeat across containers and run-once processes.
//
// Stop ends a catch-up between two events: it waits for the publish in
// flight, saves the cursor and returns, so a long catch-up to a slow
// receiver neither delays shutdown nor loses its progress.
//
// The first time a ticker runs for a unit (no cursor yet) it starts from
// now: the most recent boundary becomes the cursor without being emitted,
// so a new deployment does not replay history.
//
// Delivery is at-least-once. A crash between publishing and writing the
// cursor (written every 256 events during a catch-up, with WithLease at
// least every third of the lease's ttl, and after every live event)
// re-publishes those events; handlers deduplicate by Event.ID.
//
// Events and TicksSkipped marshal to JSON with their instants in RFC 3339
// plus the offset's seconds when it has any (local mean time such as
// Africa/Monrovia's -00:44:30 until 1972), which plain RFC 3339 would
// drop; errors and log lines print instants the same way.
//
// [SQLStore] keeps the cursors and the lease through a driver per
// database: it calls an unexported interface (driver.go), picked once
// when the store opens; the statements are written once (sql.go) and
// each database's file (driver_sqlite.go, driver_postgres.go) binds them
// to its placeholders; the layout and why, docs/design.md.
//
// # Metrics and traces
//
// A Ticker records through the OpenTelemetry metric API
// (WithMeterProvider; the global provider by default): per unit, the
// boundaries emitted and skipped, the failed publishes and store calls,
// and a histogram of the emission lag, from each boundary to its
// publication. Each event is published in a span of its own
// (WithTracerProvider), and the ctx given to Publish carries it, so the
// handlers' spans — a to-do list's actions, a schedule's runs — link to
// the tick that caused them. The Observer callbacks are called as before.
// The package imports the API only: the application installs an SDK and
// an exporter, and without one neither costs an allocation.
//
// # Tests
//
// AdvanceAndWait advances a fake clock and waits, on a signal rather than a
// sleep, until the tickers have emitted everything due: a week of minutes
// runs in milliseconds through the production path.
package tick
