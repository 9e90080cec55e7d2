package main_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
)

type soakRun struct {
	SlotID   string `db:"slot_id"`
	RunID    string `db:"run_id"`
	Schedule string `db:"schedule"`
	Slot     int64  `db:"slot"`
	FiredAt  int64  `db:"fired_at"`
	Attempt  int    `db:"attempt"`
	Manual   int    `db:"manual"`
}

type soakRecord struct {
	Key  string `db:"key"`
	Type string `db:"type"`
	Body []byte `db:"body"`
}

// soakCheck holds what the database committed and what the receiver
// accepted, and checks one against the other.
type soakCheck struct {
	t       *testing.T
	runs    []soakRun
	records []soakRecord
	acc     []soakAcceptance
	jitter  map[string]time.Duration
	specs   map[string]schedule.Spec
}

// fails reports a breach of an invariant with up to 10 examples.
func (c soakCheck) fails(what string, examples []string) {
	c.t.Helper()
	if len(examples) == 0 {
		return
	}
	shown := examples[:min(len(examples), 10)]
	c.t.Errorf("%s: %d, e.g.\n  %s", what, len(examples), strings.Join(shown, "\n  "))
}

// everyRecordDelivered: every committed record (a run, a skip report, a
// minute) was accepted at least once under its key, with the body the
// database holds; and every committed run under its slot id with the run
// id committed.
func (c soakCheck) everyRecordDelivered() {
	c.t.Helper()
	accepted := map[string][]soakAcceptance{}
	for _, a := range c.acc {
		accepted[a.Key] = append(accepted[a.Key], a)
	}
	var missing, otherBody []string
	for _, rec := range c.records {
		as := accepted[rec.Key]
		if len(as) == 0 {
			missing = append(missing, rec.Type+" "+rec.Key)
			continue
		}
		for _, a := range as {
			if a.Body != sha256.Sum256(rec.Body) {
				otherBody = append(otherBody, fmt.Sprintf("%s accepted at %s with run_id %s", rec.Key, a.At.Format(time.TimeOnly), a.RunID))
			}
		}
	}
	c.fails("committed records never accepted", missing)
	c.fails("records accepted with a body other than the committed one", otherBody)
	var runsMissing []string
	for _, r := range c.runs {
		if !slices.ContainsFunc(accepted[r.SlotID], func(a soakAcceptance) bool { return a.RunID == r.RunID && a.Type == "ScheduleRun" }) {
			runsMissing = append(runsMissing, fmt.Sprintf("%s run_id %s fired %s attempt %d", r.SlotID, r.RunID, sqldb.DecodeTime(r.FiredAt).Format(time.TimeOnly), r.Attempt))
		}
	}
	c.fails("committed runs never accepted under their slot id with their run id", runsMissing)
}

// deliveredOnce: no record was accepted twice. Without a crash a record
// is offered again only after a refusal (or a request the relay gave up,
// which the receiver does not accept either).
func (c soakCheck) deliveredOnce() {
	c.t.Helper()
	n := map[string]int{}
	for _, a := range c.acc {
		n[a.Key]++
	}
	var twice []string
	for k, x := range n {
		if x > 1 {
			twice = append(twice, fmt.Sprintf("%s %d times", k, x))
		}
	}
	slices.Sort(twice)
	c.fails("records accepted more than once", twice)
}

// nothingUncommittedDelivered: no accepted key, and no accepted run id,
// is absent from the database.
func (c soakCheck) nothingUncommittedDelivered() {
	c.t.Helper()
	keys := map[string]bool{}
	for _, rec := range c.records {
		keys[rec.Key] = true
	}
	runIDs := map[string]string{}
	for _, r := range c.runs {
		runIDs[r.RunID] = r.SlotID
	}
	var absent, runsAbsent []string
	for _, a := range c.acc {
		if !keys[a.Key] {
			absent = append(absent, a.Type+" "+a.Key)
		}
		if a.Type == "ScheduleRun" && runIDs[a.RunID] != a.SlotID {
			runsAbsent = append(runsAbsent, fmt.Sprintf("%s run_id %s fired %s accepted %s", a.Key, a.RunID, a.FiredAt.Format("15:04:05.000"), a.At.Format("15:04:05.000")))
		}
	}
	c.fails("accepted records absent from the outbox", absent)
	c.fails("accepted runs whose run id is not committed for their slot", runsAbsent)
}

// noSlotDeliveredAndSkipped: no slot was both run (accepted, or
// committed) and covered by a SlotsSkipped record of its schedule
// (committed, or accepted).
func (c soakCheck) noSlotDeliveredAndSkipped() {
	c.t.Helper()
	type span struct {
		from, to time.Time
		key      string
	}
	skipped := map[string][]span{}
	addSkip := func(schedule, key string, from, to time.Time) {
		skipped[schedule] = append(skipped[schedule], span{from, to, key})
	}
	for _, rec := range c.records {
		if rec.Type != "SlotsSkipped" {
			continue
		}
		var s sink.SlotsSkippedRecord
		require.NoError(c.t, json.Unmarshal(rec.Body, &s))
		addSkip(s.Schedule, rec.Key, s.From.Time, s.To.Time)
	}
	for _, a := range c.acc {
		if a.Type == "SlotsSkipped" {
			addSkip(a.Schedule, a.Key, a.From, a.To)
		}
	}
	var both []string
	check := func(what, schedule string, slot time.Time) {
		for _, s := range skipped[schedule] {
			if !slot.Before(s.from) && !slot.After(s.to) {
				both = append(both, fmt.Sprintf("%s %s@%s and %s", what, schedule, slot.Format(time.RFC3339), s.key))
			}
		}
	}
	for _, r := range c.runs {
		check("committed", r.Schedule, sqldb.DecodeTime(r.Slot))
	}
	for _, a := range c.acc {
		if a.Type == "ScheduleRun" {
			check("accepted", a.Schedule, a.Slot)
		}
	}
	c.fails("slots both run and reported skipped", both)
}

// due is when a slot of a schedule falls due: the slot, plus its jitter
// (schedule.Definition's, derived from the slot id).
func (c soakCheck) due(name string, slot time.Time) time.Time {
	j := c.jitter[name]
	if j <= 0 {
		return slot
	}
	h := fnv.New64a()
	h.Write([]byte(schedule.SlotID(name, slot)))
	return slot.Add(time.Duration(h.Sum64() % uint64(j)))
}

// noRunEarly: no run fired before its slot fell due.
func (c soakCheck) noRunEarly() {
	c.t.Helper()
	var early []string
	for _, r := range c.runs {
		slot, fired := sqldb.DecodeTime(r.Slot), sqldb.DecodeTime(r.FiredAt)
		if due := c.due(r.Schedule, slot); fired.Before(due) {
			early = append(early, fmt.Sprintf("%s fired %s, due %s", r.SlotID, fired.Format("15:04:05.000"), due.Format("15:04:05.000")))
		}
	}
	c.fails("runs fired before their slot was due", early)
}

// backOnTime: after the last fault, every slot of every schedule whose
// boundary (the first minute boundary at or after it is due) is a quiet
// one fired in that boundary's pass: within the minute after it.
func (c soakCheck) backOnTime(b1 time.Time, quiet []time.Duration) {
	c.t.Helper()
	fired := map[string]time.Time{}
	for _, r := range c.runs {
		fired[r.SlotID] = sqldb.DecodeTime(r.FiredAt)
	}
	from, to := b1.Add(quiet[0]), b1.Add(quiet[len(quiet)-1])
	var late []string
	checked, worst := 0, time.Duration(0)
	for name, spec := range c.specs {
		// Slots from a minute and the largest jitter before the window.
		for slot := spec.Next(from.Add(-2 * time.Minute)); !slot.IsZero() && !slot.After(to); slot = spec.Next(slot) {
			boundary := ceilMinute(c.due(name, slot))
			if boundary.Before(from) || boundary.After(to) {
				continue
			}
			checked++
			at, ok := fired[schedule.SlotID(name, slot)]
			switch {
			case !ok:
				late = append(late, fmt.Sprintf("%s@%s (boundary %s) never fired", name, slot.Format(time.TimeOnly), boundary.Format(time.TimeOnly)))
			case at.Sub(boundary) >= time.Minute:
				late = append(late, fmt.Sprintf("%s@%s (boundary %s) fired %s", name, slot.Format(time.TimeOnly), boundary.Format(time.TimeOnly), at.Format("15:04:05.000")))
			default:
				worst = max(worst, at.Sub(boundary))
			}
		}
	}
	if len(late) > 0 {
		// Evidence: the runs of the first schedules behind.
		var names []string
		for _, l := range late {
			name, _, _ := strings.Cut(l, "@")
			if !slices.Contains(names, name) && len(names) < 3 {
				names = append(names, name)
			}
		}
		byName := map[string][]string{}
		for _, r := range c.runs {
			if slices.Contains(names, r.Schedule) {
				byName[r.Schedule] = append(byName[r.Schedule], fmt.Sprintf("%s fired %s (attempt %d)",
					sqldb.DecodeTime(r.Slot).Format(time.TimeOnly), sqldb.DecodeTime(r.FiredAt).Format("15:04:05.000"), r.Attempt))
			}
		}
		for _, name := range names {
			slices.Sort(byName[name])
			c.t.Logf("runs of %s: %s", name, strings.Join(byName[name], "; "))
		}
	}
	c.t.Logf("back on time: %d slots due at the quiet boundaries %s to %s, the latest fired %v after its boundary",
		checked, from.Format(time.TimeOnly), to.Format(time.TimeOnly), worst.Round(time.Millisecond))
	require.NotZero(c.t, checked, "no slot fell at a quiet boundary")
	c.fails("slots at a quiet boundary not fired in its pass", late)
}

func ceilMinute(t time.Time) time.Time {
	if f := t.Truncate(time.Minute); !f.Equal(t) {
		return f.Add(time.Minute)
	}
	return t
}

// soakLateness is how late a run's slot was first accepted: from the
// slot, and from the minute boundary it fell due at (a jittered or
// "@every 90s" slot waits for the next minute's pass by design).
type soakLateness struct {
	slotID         string
	boundary       time.Time
	fromSlot, late time.Duration // late: from the boundary
}

// firstAccepted is when each key was first accepted.
func (c soakCheck) firstAccepted() map[string]time.Time {
	first := map[string]time.Time{}
	for _, a := range c.acc {
		if f, ok := first[a.Key]; !ok || a.At.Before(f) {
			first[a.Key] = a.At
		}
	}
	return first
}

// lateness is the lateness of every committed run that was accepted.
func (c soakCheck) lateness() []soakLateness {
	first := c.firstAccepted()
	var out []soakLateness
	for _, r := range c.runs {
		if at, ok := first[r.SlotID]; ok {
			slot := sqldb.DecodeTime(r.Slot)
			due := ceilMinute(c.due(r.Schedule, slot))
			out = append(out, soakLateness{slotID: r.SlotID, boundary: due, fromSlot: at.Sub(slot), late: at.Sub(due)})
		}
	}
	return out
}

// report logs the figures: runs, deliveries, duplicates, the receiver's
// refusals and stalls, and the lateness from slot to first acceptance —
// of every run, and of the runs of live slots (falling due from B1 on:
// not the backlog of the five minutes before the start).
func (c soakCheck) report(recv *soakReceiver, b1 time.Time) {
	byType := map[string]int{}
	for _, a := range c.acc {
		byType[a.Type]++
	}
	var late, lateDue, live, liveDue []time.Duration
	for _, l := range c.lateness() {
		late = append(late, l.fromSlot)
		lateDue = append(lateDue, l.late)
		if !l.boundary.Before(b1) {
			live = append(live, l.fromSlot)
			liveDue = append(liveDue, l.late)
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	mostKey, most := "", 0
	for k, n := range recv.refusedKey {
		if n > most || n == most && k < mostKey {
			mostKey, most = k, n
		}
	}
	c.t.Logf("committed: %d runs, %d outbox records; receiver: %d requests, %d accepted (%v), %d duplicates, %d refused with 500 or 503 (at most %d times one key, %s), %d stalled for %v and accepted, of %d stalled",
		len(c.runs), len(c.records), recv.requests, len(c.acc), byType, len(c.acc)-len(c.firstAccepted()), recv.refused, most, mostKey, recv.stalled, recv.plan.stallFor, recv.stalls)
	for _, l := range []struct {
		what       string
		slot, from []time.Duration
	}{{"every run", late, lateDue}, {"live slots", live, liveDue}} {
		c.t.Logf("%s (%d): slot to first acceptance p50 %v, p99 %v, max %v; from the boundary the slot fell due at p50 %v, p99 %v, max %v",
			l.what, len(l.slot), pct(l.slot, 50), pct(l.slot, 99), pct(l.slot, 100), pct(l.from, 50), pct(l.from, 99), pct(l.from, 100))
	}
	c.reportBoundaries(b1)
}

// punctual checks p: the slots falling due at its boundaries were first
// accepted, p99 of them, less than p.p99 after their boundary. It logs
// their figures and the latest slots.
func (c soakCheck) punctual(b1 time.Time, p soakPunctual) {
	c.t.Helper()
	if p.p99 == 0 {
		return
	}
	from, to := b1.Add(p.from), b1.Add(p.to)
	var all []soakLateness
	for _, l := range c.lateness() {
		if !l.boundary.Before(from) && !l.boundary.After(to) {
			all = append(all, l)
		}
	}
	require.NotEmpty(c.t, all, "no run accepted for the boundaries %s to %s", from.Format(time.TimeOnly), to.Format(time.TimeOnly))
	slices.SortFunc(all, func(a, b soakLateness) int { return int(b.late - a.late) })
	var latest []string
	ds := make([]time.Duration, len(all))
	for i, l := range all {
		ds[i] = l.late
		if i < 5 {
			latest = append(latest, fmt.Sprintf("%s %v", l.slotID, l.late.Round(time.Millisecond)))
		}
	}
	p99 := pct(ds, 99)
	c.t.Logf("punctual: %d slots due at the boundaries %s to %s, first accepted p50 %v, p99 %v (bound %v), max %v after their boundary; latest %s",
		len(all), from.Format(time.TimeOnly), to.Format(time.TimeOnly), pct(ds, 50), p99, p.p99, pct(ds, 100), strings.Join(latest, ", "))
	if p99 >= p.p99 {
		c.t.Errorf("slots due at the boundaries %s to %s first accepted p99 %v after their boundary, want under %v",
			from.Format(time.TimeOnly), to.Format(time.TimeOnly), p99, p.p99)
	}
}

// reportBoundaries logs, for each boundary from B1 on, the lateness of
// the slots falling due at it: which minutes a fault made late.
func (c soakCheck) reportBoundaries(b1 time.Time) {
	byBoundary := map[int64][]time.Duration{} // by Unix second
	last := b1
	for _, l := range c.lateness() {
		if !l.boundary.Before(b1) {
			byBoundary[l.boundary.Unix()] = append(byBoundary[l.boundary.Unix()], l.late)
			last = later(last, l.boundary)
		}
	}
	for b := b1; !b.After(last); b = b.Add(time.Minute) {
		ds := byBoundary[b.Unix()]
		c.t.Logf("boundary B1+%v (%s): %d slots, first accepted p50 %v, p99 %v, max %v after it; %d of them 5 s or more",
			b.Sub(b1), b.Format(time.TimeOnly), len(ds), pct(ds, 50), pct(ds, 99), pct(ds, 100), countAtLeast(ds, 5*time.Second))
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func countAtLeast(ds []time.Duration, d time.Duration) int {
	n := 0
	for _, x := range ds {
		if x >= d {
			n++
		}
	}
	return n
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return s[max(i, 0)].Round(time.Millisecond)
}
