// Package schedule describes recurring schedules: the instants ("slots")
// at which a schedule fires, as a one-method Spec (Next) that parsers
// return and that unions and exceptions compose.
//
// # Kinds of spec
//
//   - Every: fixed intervals, absolute durations from an anchor.
//   - Calendar: every N days, weeks, months or years; weekdays; the nth or
//     last weekday of the month; days of the month, with a stated choice
//     for the 31st in short months (ShortMonths); times of day; Count and
//     Until. Built as RFC 5545 rules.
//   - Cron: 5 or 6 fields and the @daily-style descriptors, read by
//     github.com/robfig/cron/v3.
//   - RRule: iCalendar recurrences (DTSTART with TZID, RRULE, RDATE,
//     EXDATE), expanded by github.com/teambition/rrule-go.
//   - Easter: Western or Orthodox Easter with a day offset (Good Friday,
//     Easter Monday).
//   - Union, Except and Dates: several specs as one; a holiday list or
//     rule that removes a date's slots.
//
// Parse reads the text forms the ticker's command line takes.
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
package schedule
