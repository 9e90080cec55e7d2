package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/passage-of-time/passage/internal/names"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// Overlap says what a slot does while an earlier run of the same schedule
// is still open (its handler returned ErrStillRunning and Finish has not
// been called).
type Overlap int

const (
	// AllowOverlap fires the slot anyway: runs may overlap. The default.
	AllowOverlap Overlap = iota
	// SkipOverlap does not fire the slot; it is counted and reported
	// skipped (SlotsSkipped with Policy "overlap").
	SkipOverlap
	// BufferOne keeps the slot until the open run finishes and fires it
	// then (Finish makes it due at once); of several slots that pass
	// meanwhile, the catch-up policy decides which fire (tick.LatestOnly,
	// the default: one).
	BufferOne
)

func (o Overlap) String() string {
	switch o {
	case SkipOverlap:
		return "skip"
	case BufferOne:
		return "buffer-one"
	}
	return "allow"
}

func parseOverlap(s string) Overlap {
	for _, o := range []Overlap{SkipOverlap, BufferOne} {
		if o.String() == s {
			return o
		}
	}
	return AllowOverlap
}

// Definition is a schedule as the application declares it (Sync).
type Definition struct {
	// Name identifies the schedule: its row, its to-do item's ID and the
	// first part of every slot id. Required: 1 to 200 bytes of UTF-8
	// without control characters, and neither "." nor ".." (no URL path
	// carries them to the dashboard).
	Name string
	// Spec gives the slots. Required.
	Spec Spec
	// Command names what the schedule sends; Payload is its content. Both
	// reach the Handler as they are.
	Command string
	Payload []byte
	// CatchUp decides what happens to slots that passed while nothing fired
	// them (the process was down, or a run failed until the next slot):
	// tick.LatestOnly (nil means it) fires the latest once and reports the
	// others skipped; tick.All{Window, Max} fires each one within
	// Window of now, the latest Max of them, oldest first; tick.Skip fires
	// only a slot that passed within the live window (WithLiveWindow).
	// Whatever is not fired is counted and reported (SlotsSkipped).
	CatchUp tick.CatchUp
	// MaxRuns ends the schedule after this many runs of its plan (manual
	// triggers do not count); 0 means no limit.
	MaxRuns int
	// Until ends the schedule: no slot after it. Zero means no end.
	Until time.Time
	// Jitter spreads the firings of many schedules with the same slots:
	// each slot fires up to Jitter after its instant, by an offset
	// derived from its slot id, so the same slot always gets the same
	// offset on every replica and every restart. Run.Slot stays the
	// planned instant. Zero means none; at most MaxInterval. Keep it below
	// the spacing of the slots: a larger one can bring a later slot's
	// time before an earlier one's, and the catch-up policy then decides
	// between them as between missed slots.
	Jitter time.Duration
	// Overlap says what a slot does while a run of the schedule is still
	// open (see ErrStillRunning); AllowOverlap by default.
	Overlap Overlap
}

func (d Definition) validate() error {
	switch {
	case d.Name == "":
		return fmt.Errorf("%w: a schedule needs a name", ErrInvalidSpec)
	case len(d.Name) > 200:
		return fmt.Errorf("%w: schedule name %.20q… is longer than 200 bytes", ErrInvalidSpec, d.Name)
	case names.Check(d.Name, 200) != nil:
		return fmt.Errorf("%w: schedule name: %w", ErrInvalidSpec, names.Check(d.Name, 200))
	case d.Spec == nil:
		return fmt.Errorf("%w: schedule %q has no spec", ErrInvalidSpec, d.Name)
	case d.MaxRuns < 0:
		return fmt.Errorf("%w: schedule %q: MaxRuns %d is negative", ErrInvalidSpec, d.Name, d.MaxRuns)
	case d.Overlap < AllowOverlap || d.Overlap > BufferOne:
		return fmt.Errorf("%w: schedule %q: Overlap %d is not AllowOverlap, SkipOverlap or BufferOne", ErrInvalidSpec, d.Name, d.Overlap)
	case d.Jitter < 0 || d.Jitter > MaxInterval:
		return fmt.Errorf("%w: schedule %q: Jitter %v must be between 0 and %v", ErrInvalidSpec, d.Name, d.Jitter, MaxInterval)
	}
	if !d.Until.IsZero() {
		// Stored as nanoseconds, an Until outside their range would wrap
		// around to another instant: an end in 2300 would end it in 1700.
		if err := sqldb.CheckTime(d.Until); err != nil {
			return fmt.Errorf("%w: schedule %q: Until: %w", ErrInvalidSpec, d.Name, err)
		}
	}
	if d.CatchUp != nil {
		if a, ok := d.CatchUp.(tick.All); ok && (a.Window <= 0 || a.Max <= 0 || a.Window > tick.MaxDuration) {
			return fmt.Errorf("%w: schedule %q: catch-up All needs a positive Window (at most %v) and Max, got %v and %d", ErrInvalidSpec, d.Name, tick.MaxDuration, a.Window, a.Max)
		}
	}
	return nil
}

// policyText is a catch-up policy's stored form: "latest-only", "skip"
// or "all/WINDOW/MAX".
func policyText(p tick.CatchUp) string {
	if a, ok := p.(tick.All); ok {
		return fmt.Sprintf("all/%s/%d", a.Window, a.Max)
	}
	return policyName(p)
}

func parsePolicy(text string) tick.CatchUp {
	parts := strings.Split(text, "/")
	if len(parts) == 3 && parts[0] == "all" {
		w, err1 := time.ParseDuration(parts[1])
		m, err2 := strconv.Atoi(parts[2])
		if err1 == nil && err2 == nil {
			return tick.All{Window: w, Max: m}
		}
	}
	if text == "skip" {
		return tick.Skip{}
	}
	return tick.LatestOnly{}
}

// state is a schedule's row.
type state struct {
	Name     string `db:"name"`
	Spec     string `db:"spec"`
	Hash     string `db:"hash"`
	Command  string `db:"command"`
	Payload  []byte `db:"payload"`
	CatchUp  string `db:"catch_up"`
	MaxRuns  int    `db:"max_runs"`
	Until    int64  `db:"until"`
	Paused   int    `db:"paused"`
	Runs     int64  `db:"runs"`
	Skipped  int64  `db:"skipped"`
	NextSlot int64  `db:"next_slot"`
	Jitter   int64  `db:"jitter"`
	Overlap  string `db:"overlap"`
}

// due is when the to-do item for slot falls due: the slot, plus its
// jitter.
func (d Definition) due(slot time.Time) time.Time {
	if d.Jitter <= 0 {
		return slot
	}
	h := fnv.New64a()
	h.Write([]byte(SlotID(d.Name, slot)))
	return slot.Add(time.Duration(h.Sum64() % uint64(d.Jitter)))
}

// nextAfter returns the first slot after t that the definition still
// fires, given runs so far, or zero when it has ended.
func (d Definition) nextAfter(t time.Time, runs int64) time.Time {
	if d.MaxRuns > 0 && runs >= int64(d.MaxRuns) {
		return time.Time{}
	}
	n := d.Spec.Next(t)
	if !d.Until.IsZero() && n.After(d.Until) {
		return time.Time{}
	}
	return n
}

// row is d as stored, its next slot next.
func (d Definition) row(next time.Time) state {
	return state{Name: d.Name, Spec: d.Spec.String(), Hash: d.hash(), Command: d.Command, Payload: d.Payload, CatchUp: policyText(d.CatchUp),
		MaxRuns: d.MaxRuns, Until: untilOf(d), NextSlot: encodeSlot(next), Jitter: int64(d.Jitter), Overlap: d.Overlap.String()}
}

func encodeSlot(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return sqldb.EncodeTime(t)
}

func policyName(p tick.CatchUp) string {
	switch p.(type) {
	case tick.All:
		return "all"
	case tick.Skip:
		return "skip"
	}
	return "latest-only"
}

// untilOf is d.Until as stored: zero for no end.
func untilOf(d Definition) int64 {
	if d.Until.IsZero() {
		return 0
	}
	return sqldb.EncodeTime(d.Until)
}

// hash is the identity of everything that shapes a schedule's slots and
// runs: a change to any of it reprograms the schedule.
func (d Definition) hash() string {
	h := sha256.New()
	for _, part := range []string{d.Spec.String(), d.Command, string(d.Payload), policyText(d.CatchUp), fmt.Sprint(d.MaxRuns), d.Until.UTC().Format(time.RFC3339Nano), d.Jitter.String(), d.Overlap.String()} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}
