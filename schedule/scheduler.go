package schedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

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

// bufferRecheck is how often a slot buffered behind an open run is looked
// at again, in case Finish is never called (a lost worker's run stays
// open until someone finishes it).
const bufferRecheck = time.Minute

// Definition is a schedule as the application declares it (Sync).
type Definition struct {
	// Name identifies the schedule: its row, its to-do item's ID and the
	// first part of every slot id. Required.
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

// Run is one firing of a schedule, as its Handler sees it.
type Run struct {
	// RunID is fresh for every run: the run's own correlation id.
	RunID string
	// SlotID is the schedule's name and the slot's instant: the same for
	// every attempt of the same slot on every replica, so a receiver can
	// deduplicate by it. A manual run's slot id names the run instead.
	SlotID string
	// Schedule is the schedule's name.
	Schedule string
	// Slot is the instant the run was planned for; FiredAt when it fired.
	Slot, FiredAt time.Time
	// Attempt counts from 1; it grows when a run failed and is retried.
	Attempt int
	// Manual is true for a run started by Trigger, outside the plan.
	Manual bool
	// Command and Payload are the schedule's.
	Command string
	Payload []byte
}

// Handler receives each run of every schedule, inside the transaction that
// records the run and moves the schedule to its next slot: what it writes
// with tx (an outbox row, an event) commits with the run or not at all. An
// error rolls everything back; the slot is tried again after a backoff,
// with the same SlotID. A run may be attempted more than once (a crash
// after the handler's side effects outside tx, or another slot of its
// batch failing after it: the batch is then fired again slot by slot),
// never recorded twice.
//
// Keep it short: it hands the command over, it does not do the work.
// The transaction is open while it runs, and on SQLite it holds the
// database's write lock. Work that takes long goes to a queue or another
// service; the handler then returns ErrStillRunning, and whoever finishes
// the work calls Scheduler.Finish, so that the schedule's Overlap policy
// knows the run is still open meanwhile.
type Handler func(ctx context.Context, tx *sqlx.Tx, run Run) error

// SlotsSkipped reports slots a catch-up policy did not fire, published
// (WithPublisher) after the transaction that counted them commits.
type SlotsSkipped struct {
	Schedule string
	// From and To are the first and last skipped slots; Count how many
	// there were (from From to To inclusive).
	From, To time.Time
	Count    int64
	// Policy names the catch-up policy: "all", "latest-only" or "skip".
	Policy string
}

// Scheduler keeps schedules in a database and fires their slots. Each
// schedule's next slot is one item of a to-do list: a Processor over that
// list (Scheduler.Processor), driven by the passage of time like any
// other, fires what is due. A Scheduler is safe for concurrent use, and
// any number of processes may open one on the same database: a batch of
// due slots fires in the transaction that takes their items (locked on
// PostgreSQL, under the write lock on SQLite), which keeps two of them
// from firing one schedule at once, and the run's slot id keeps a slot
// from being recorded twice.
type Scheduler struct {
	db        *sqlx.DB
	driver    driver
	list      *todolist.List
	handler   Handler
	clock     clockwork.Clock
	publisher tick.Publisher
	recordTx  func(ctx context.Context, tx *sqlx.Tx, r SlotsSkipped) error
	live      time.Duration

	mu       sync.Mutex
	declared map[string]Definition // by Sync in this process, if their text does not read back
	specs    map[string]Spec       // read back from stored text (parsed)

	reportFailures atomic.Int64
}

// Option configures a Scheduler.
type Option func(*Scheduler) error

// WithClock sets the clock the scheduler plans by; the default is the
// real one.
func WithClock(c clockwork.Clock) Option {
	return func(s *Scheduler) error {
		if c == nil {
			return fmt.Errorf("%w: WithClock: clock must not be nil", ErrInvalidSpec)
		}
		s.clock = c
		return nil
	}
}

// WithSkipsRecordedTx hands every SlotsSkipped to record inside the
// transaction that counted it, before it commits: for an outbox, so that
// a report is delivered if and only if the firing that decided it
// commits (WithPublisher publishes after the commit, and loses a report
// when the process ends in between). An error from record fails the
// batch: its slots are retried, and nothing of it is stored.
func WithSkipsRecordedTx(record func(ctx context.Context, tx *sqlx.Tx, r SlotsSkipped) error) Option {
	return func(s *Scheduler) error {
		if record == nil {
			return fmt.Errorf("%w: WithSkipsRecordedTx: nil function", ErrInvalidSpec)
		}
		s.recordTx = record
		return nil
	}
}

// WithPublisher publishes a SlotsSkipped for every skip (the bus's
// Publish fits).
func WithPublisher(p tick.Publisher) Option {
	return func(s *Scheduler) error {
		s.publisher = p
		return nil
	}
}

// WithLiveWindow sets how late a slot may be fired and still count as on
// time for tick.Skip (default 2 minutes: a minute's tick, and its
// processing).
func WithLiveWindow(d time.Duration) Option {
	return func(s *Scheduler) error {
		if d <= 0 || d > MaxInterval {
			return fmt.Errorf("%w: WithLiveWindow: %v must be positive and at most %v", ErrInvalidSpec, d, MaxInterval)
		}
		s.live = d
		return nil
	}
}

// Open returns the scheduler of db, creating its tables on first use. The
// handler receives every run.
func Open(ctx context.Context, db *sqlx.DB, handler Handler, opts ...Option) (*Scheduler, error) {
	if db == nil || handler == nil {
		return nil, errors.New("schedule: open: db and handler must not be nil")
	}
	s := &Scheduler{db: db, handler: handler, clock: clockwork.NewRealClock(), live: 2 * time.Minute, declared: map[string]Definition{}, specs: map[string]Spec{}}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, fmt.Errorf("schedule: open: %w", err)
		}
	}
	if err := sqldb.Migrate(ctx, db, "schedule", migrations); err != nil {
		return nil, fmt.Errorf("schedule: open: %w", err)
	}
	list, err := todolist.Open(ctx, db, listName, todolist.WithListClock(s.clock))
	if err != nil {
		return nil, fmt.Errorf("schedule: open: %w", err)
	}
	s.list = list
	s.driver = driverFor(db)
	return s, nil
}

// Processor returns a processor of the schedules' to-do list that fires
// due slots; subscribe its handler to the passage of time, e.g.
// bus.Subscribe(b, todolist.Handler[tick.MinuteHasPassed](p)). Its
// options (batch size, attempts, backoff, time budget) apply to runs: a
// failing run is retried with backoff and parked after the maximum
// attempts. It is a transactional batch processor
// ([todolist.NewTxBatchProcessor]): a batch of slots is taken, fired and
// moved on in one transaction, so it takes no lease.
//
// A schedule behind with the catch-up policy tick.All fires one missed
// slot, the oldest, each time its item is taken, and its item is then due
// at once for the next: a processor's Process does not take an item again
// in the same call, so a schedule N slots behind needs N calls. Call
// Process again at the same boundary while its Result claimed anything
// (as "ticker run" does), or a schedule behind catches up one slot a tick
// and stays behind.
func (s *Scheduler) Processor(opts ...todolist.ProcessorOption) (*todolist.Processor, error) {
	return todolist.NewTxBatchProcessor(s.list, s.fireBatch, append([]todolist.ProcessorOption{todolist.WithClock(s.clock)}, opts...)...)
}

// ToDo returns the to-do list that holds each schedule's next slot.
func (s *Scheduler) ToDo() *todolist.List { return s.list }

// SyncResult says what Sync did with each declared schedule.
type SyncResult struct {
	Added, Changed, Unchanged []string
}

// Sync makes the stored schedules match the declared ones, as an
// application does at every start. A schedule that is new is stored, its
// first slot the first after now. One whose definition is unchanged is
// left exactly as it is: its next slot neither fires again nor moves. One
// whose definition changed takes effect at once: its next slot is
// recomputed from now, so "every hour" replaces "every 8 hours" without
// waiting out the pending 8 hours. Its runs so far still count toward
// MaxRuns. A paused schedule stays paused.
//
// All the definitions are synced in one transaction: all or none.
//
// Stored schedules that are not declared are left alone (another process
// may declare them, or an operator may have added them); Delete removes
// one. Schedules this process declares fire by their Spec; others by the
// stored text of theirs, which must read back (Parse).
func (s *Scheduler) Sync(ctx context.Context, defs ...Definition) (SyncResult, error) {
	var res SyncResult
	seen := map[string]bool{}
	for _, d := range defs {
		if err := d.validate(); err != nil {
			return res, err
		}
		if seen[d.Name] {
			return res, fmt.Errorf("%w: sync: schedule %q is declared twice", ErrInvalidSpec, d.Name)
		}
		seen[d.Name] = true
	}
	// One transaction for all of them: a start declaring thousands of
	// schedules costs one commit, and either all of them are synced or
	// none.
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		res = SyncResult{}
		outcomes, err := s.syncAll(ctx, tx, defs)
		if err != nil {
			return err
		}
		for i, d := range defs {
			switch outcomes[i] {
			case "added":
				res.Added = append(res.Added, d.Name)
			case "changed":
				res.Changed = append(res.Changed, d.Name)
			default:
				res.Unchanged = append(res.Unchanged, d.Name)
			}
		}
		return nil
	})
	if err != nil {
		return SyncResult{}, err
	}
	// Memory stays flat in the number of schedules: a definition is kept
	// only when its stored text does not read back (Easter, unions,
	// exceptions); the others fire from what is stored, as in any process.
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range defs {
		if readsBack(d.Spec) {
			delete(s.declared, d.Name)
		} else {
			s.declared[d.Name] = d
		}
	}
	return res, nil
}

func (d Definition) validate() error {
	switch {
	case d.Name == "":
		return fmt.Errorf("%w: a schedule needs a name", ErrInvalidSpec)
	case len(d.Name) > 200:
		return fmt.Errorf("%w: schedule name %.20q… is longer than 200 bytes", ErrInvalidSpec, d.Name)
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

// hash is the identity of everything that shapes a schedule's slots and
// runs: a change to any of it reprograms the schedule.
func (d Definition) hash() string {
	h := sha256.New()
	for _, part := range []string{d.Spec.String(), d.Command, string(d.Payload), policyText(d.CatchUp), fmt.Sprint(d.MaxRuns), d.Until.UTC().Format(time.RFC3339Nano), d.Jitter.String(), d.Overlap.String()} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
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

// load reads a schedule's row in tx and locks it: its item first, then
// its row (the driver's lockSchedule), so that a firing, a Sync and a
// Pause of the same schedule take turns and lock in one order: a batch of
// firings holds its items from the moment it takes them, and only then
// writes the schedules' rows.
func (s *Scheduler) load(ctx context.Context, tx *sqlx.Tx, name string) (state, bool, error) {
	if err := s.list.HoldTx(ctx, tx, name); err != nil {
		return state{}, false, err
	}
	return s.driver.lockSchedule(ctx, tx, name)
}

// sync stores one definition in tx and reports "added", "changed" or
// "unchanged".
func (s *Scheduler) sync(ctx context.Context, tx *sqlx.Tx, d Definition) (string, error) {
	hash := d.hash()
	st, found, err := s.load(ctx, tx, d.Name)
	if err != nil {
		return "", err
	}
	if found && st.Hash == hash {
		return "unchanged", nil
	}
	next := d.nextAfter(s.clock.Now(), st.Runs)
	outcome := "added"
	if !found {
		err = s.driver.insertSchedule(ctx, tx, d.row(next))
	} else {
		outcome = "changed"
		if st.Paused != 0 {
			next = time.Time{}
		} else if st.NextSlot != 0 && !sqldb.DecodeTime(st.NextSlot).After(s.clock.Now()) {
			// The old definition's slot had come but not fired yet; the
			// new one counts from now, so that slot is skipped: say so.
			if err := s.driver.recordFired(ctx, tx, []fired{{name: d.Name, skipped: 1, next: st.NextSlot}}); err != nil {
				return "", err
			}
		}
		err = s.driver.updateDefinition(ctx, tx, d.row(next))
		if err == nil {
			// Remove first: a re-add never brings an item forward.
			err = s.list.RemoveTx(ctx, tx, d.Name)
		}
	}
	if err == nil && !next.IsZero() {
		err = s.list.AddTx(ctx, tx, d.Name, d.due(next))
	}
	return outcome, err
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

func (s *Scheduler) inTx(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// maxParsed bounds the cache of specs read back from their text.
const maxParsed = 4096

// parsed returns the spec a stored text reads back to (in the zone the
// text names), from a small cache: many schedules share their spec, and
// reading a spec costs more than firing a slot.
func (s *Scheduler) parsed(text string) (Spec, error) {
	s.mu.Lock()
	spec, ok := s.specs[text]
	s.mu.Unlock()
	if ok {
		return spec, nil
	}
	spec, err := Parse(text, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.specs) >= maxParsed {
		clear(s.specs) // simplest bound: start over
	}
	s.specs[text] = spec
	return spec, nil
}

// readsBack reports whether Parse reads spec's text back to the same spec.
func readsBack(spec Spec) bool {
	back, err := Parse(spec.String(), nil)
	return err == nil && back.String() == spec.String()
}

// definition returns how to fire a stored schedule: as this process
// declared it, else from its stored text.
func (s *Scheduler) definition(st state) (Definition, error) {
	s.mu.Lock()
	d, ok := s.declared[st.Name]
	s.mu.Unlock()
	if ok && d.hash() == st.Hash {
		return d, nil
	}
	spec, err := s.parsed(st.Spec)
	if err != nil {
		return Definition{}, fmt.Errorf("schedule %q: its stored spec %q does not read back (declare it with Sync in the process that fires it): %w", st.Name, st.Spec, err)
	}
	d = Definition{Name: st.Name, Spec: spec, Command: st.Command, Payload: st.Payload, MaxRuns: st.MaxRuns, Jitter: time.Duration(st.Jitter), Overlap: parseOverlap(st.Overlap)}
	if st.Until != 0 {
		d.Until = sqldb.DecodeTime(st.Until)
	}
	d.CatchUp = parsePolicy(st.CatchUp)
	return d, nil
}

// maxCounted bounds how many missed slots a catch-up plan walks through;
// past it, the count of skipped slots is a lower bound.
const maxCounted = 1_000_000

// plan is what one firing does: fire one slot (or none), and report the
// slots before it (or all of them) skipped.
type plan struct {
	fire             time.Time
	skipFrom, skipTo time.Time
	skipped          int64
	// early is true when the first slot's time — the slot plus its jitter
	// — has not come by the deciding clock: the item was taken by a clock
	// ahead of this one, or this one stepped back since. Nothing fires,
	// nothing is skipped, and the slot must be kept (see notYet).
	early bool
}

// planFor applies the catch-up policy to the slots from first (the due
// item's) to now.
func (s *Scheduler) planFor(d Definition, first, now time.Time) plan {
	var slots []time.Time // the latest ones, as many as the policy may fire
	keep := 1
	if a, ok := d.CatchUp.(tick.All); ok {
		keep = a.Max
	}
	var p plan
	if !first.IsZero() && (d.Until.IsZero() || !first.After(d.Until)) && d.due(first).After(now) {
		p.early = true
		return p
	}
	walked := 0
	// A slot has come when its due time — the slot plus its jitter — has:
	// a later slot whose jittered time is still ahead is not missed.
	for at := first; !at.IsZero() && !d.due(at).After(now) && walked < maxCounted; at = d.Spec.Next(at) {
		if !d.Until.IsZero() && at.After(d.Until) {
			break
		}
		walked++
		if len(slots) == keep {
			p.skip(slots[0])
			slots = slots[1:]
		}
		slots = append(slots, at)
	}
	if len(slots) == 0 {
		return p
	}
	switch c := d.CatchUp.(type) {
	case tick.All:
		for len(slots) > 0 && d.due(slots[0]).Before(now.Add(-c.Window)) {
			p.skip(slots[0])
			slots = slots[1:]
		}
	case tick.Skip:
		if now.Sub(d.due(slots[0])) > s.live {
			p.skip(slots[0])
			slots = nil
		}
	}
	if len(slots) > 0 {
		p.fire = slots[0]
	}
	return p
}

func (p *plan) skip(at time.Time) {
	if p.skipFrom.IsZero() {
		p.skipFrom = at
	}
	p.skipTo = at
	p.skipped++
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

// record records a run of slot and hands it to the handler, in tx: the
// run it made, or a zero Run when the slot had one already (another
// replica, or an earlier attempt that committed).
func (s *Scheduler) record(ctx context.Context, tx *sqlx.Tx, st state, slot time.Time, attempt int) (Run, error) {
	return s.recordRun(ctx, tx, Run{
		RunID:    newRunID(),
		SlotID:   SlotID(st.Name, slot),
		Schedule: st.Name,
		Slot:     slot,
		FiredAt:  s.clock.Now(),
		Attempt:  attempt,
		Command:  st.Command,
		Payload:  st.Payload,
	})
}

// recordRun records r and hands it to the handler, in tx, leaving it open
// when the handler says it goes on; it returns a zero Run when r's slot
// had a run already.
func (s *Scheduler) recordRun(ctx context.Context, tx *sqlx.Tx, r Run) (Run, error) {
	recorded, err := s.driver.insertRuns(ctx, tx, []Run{r})
	if err != nil || !recorded[r.SlotID] {
		return Run{}, err
	}
	if err := s.callHandler(ctx, tx, r); err != nil {
		if !errors.Is(err, ErrStillRunning) {
			return Run{}, err
		}
		if err := s.driver.markRunning(ctx, tx, []string{r.RunID}); err != nil {
			return Run{}, err
		}
	}
	return r, nil
}

// Finish closes a run its handler left open (ErrStillRunning). A slot
// buffered behind it (BufferOne) becomes due at once; a next slot whose
// jittered time has not come stays due at that time. Finishing a
// finished run changes nothing; an unknown run id is an error wrapping
// ErrUnknownRun.
func (s *Scheduler) Finish(ctx context.Context, runID string) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		schedule, finished, found, err := s.driver.runOf(ctx, tx, runID)
		if err == nil && !found {
			return fmt.Errorf("%w: %q", ErrUnknownRun, runID)
		} else if err != nil || finished {
			return err
		}
		if err := s.driver.finishRun(ctx, tx, runID); err != nil {
			return err
		}
		st, found, err := s.load(ctx, tx, schedule)
		if err != nil || !found || st.Paused != 0 || st.NextSlot == 0 {
			return err
		}
		// A slot has come when its due time — the slot plus its jitter —
		// has, as firing reckons (planFor). One whose jittered time is
		// still ahead is not buffered: its item stays due then; pulling
		// it to now would find nothing due and move past it, losing it.
		// A buffered slot's jittered time has come (it was fired but
		// held back), so it becomes due now.
		now := s.clock.Now()
		jitter := Definition{Name: st.Name, Jitter: time.Duration(st.Jitter)}
		if jitter.due(sqldb.DecodeTime(st.NextSlot)).After(now) {
			return nil // nothing buffered: the next slot has not come
		}
		// Remove first: a re-add never brings an item forward.
		if err := s.list.RemoveTx(ctx, tx, st.Name); err != nil {
			return err
		}
		return s.list.AddTx(ctx, tx, st.Name, now)
	})
	if err != nil {
		return fmt.Errorf("schedule: finish run %q: %w", runID, err)
	}
	return nil
}

// callHandler turns a handler's panic into an error, so a bad run is
// retried and parked like any failure instead of taking the process down.
func (s *Scheduler) callHandler(ctx context.Context, tx *sqlx.Tx, r Run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schedule: handler panicked on %s: %v", r.SlotID, p)
		}
	}()
	return s.handler(ctx, tx, r)
}

// SlotID is the deterministic id of a schedule's slot: its name and the
// slot's instant in UTC.
func SlotID(name string, slot time.Time) string {
	return name + "@" + slot.UTC().Format(time.RFC3339Nano)
}

// ReportFailures counts SlotsSkipped reports the publisher refused; the
// skipped slots themselves are counted in each schedule's state.
func (s *Scheduler) ReportFailures() int64 { return s.reportFailures.Load() }

// State is a stored schedule as List reports it.
type State struct {
	Name    string
	Spec    string
	Command string
	Paused  bool
	// Runs counts the runs of its plan; Skipped the slots a catch-up
	// policy did not fire.
	Runs, Skipped int64
	// Next is its next slot, zero when paused or ended.
	Next time.Time
	// Jitter and Overlap are its definition's.
	Jitter  time.Duration
	Overlap Overlap
}

// stateOf is what List and Inspect report of a schedule's row.
func stateOf(r state) State {
	return State{Name: r.Name, Spec: r.Spec, Command: r.Command, Paused: r.Paused != 0, Runs: r.Runs, Skipped: r.Skipped,
		Jitter: time.Duration(r.Jitter), Overlap: parseOverlap(r.Overlap)}
}

// List returns every stored schedule, by name.
func (s *Scheduler) List(ctx context.Context) ([]State, error) {
	rows, err := s.driver.schedules(ctx, s.db)
	if err != nil {
		return nil, fmt.Errorf("schedule: list: %w", err)
	}
	out := make([]State, len(rows))
	for i, r := range rows {
		out[i] = stateOf(r)
		if r.NextSlot != 0 {
			out[i].Next = sqldb.DecodeTime(r.NextSlot)
		}
	}
	return out, nil
}

// Pause stops a schedule from firing until Resume: its next slot is
// taken off the to-do list. Pausing a paused schedule changes nothing.
func (s *Scheduler) Pause(ctx context.Context, name string) error {
	return s.change(ctx, "pause", name, func(tx *sqlx.Tx, st state) error {
		if err := s.driver.setPaused(ctx, tx, name, true, 0); err != nil {
			return err
		}
		return s.list.RemoveTx(ctx, tx, name)
	})
}

// Resume lets a paused schedule fire again from its first slot after now:
// the slots that passed while it was paused are not fired, nor reported
// skipped (pausing said so). Resuming a running schedule changes nothing.
func (s *Scheduler) Resume(ctx context.Context, name string) error {
	return s.change(ctx, "resume", name, func(tx *sqlx.Tx, st state) error {
		if st.Paused == 0 {
			return nil
		}
		d, err := s.definition(st)
		if err != nil {
			return err
		}
		next := d.nextAfter(s.clock.Now(), st.Runs)
		if err := s.driver.setPaused(ctx, tx, name, false, encodeSlot(next)); err != nil {
			return err
		}
		if next.IsZero() {
			return nil
		}
		return s.list.AddTx(ctx, tx, name, d.due(next))
	})
}

// Delete removes a schedule and its next slot; its runs stay recorded.
func (s *Scheduler) Delete(ctx context.Context, name string) error {
	err := s.change(ctx, "delete", name, func(tx *sqlx.Tx, st state) error {
		if err := s.driver.deleteSchedule(ctx, tx, name); err != nil {
			return err
		}
		return s.list.RemoveTx(ctx, tx, name)
	})
	if err == nil {
		s.mu.Lock()
		delete(s.declared, name)
		s.mu.Unlock()
	}
	return err
}

// Trigger runs a schedule now, outside its plan: a run with its own run
// id and a slot id that names it, handed to the handler like any other.
// The plan is untouched: the next slot still fires when due, and the run
// does not count toward MaxRuns. A paused schedule can be triggered.
func (s *Scheduler) Trigger(ctx context.Context, name string) (Run, error) {
	var r Run
	err := s.change(ctx, "trigger", name, func(tx *sqlx.Tx, st state) error {
		now := s.clock.Now()
		var err error
		r, err = s.manualRun(ctx, tx, st, now)
		return err
	})
	return r, err
}

func (s *Scheduler) manualRun(ctx context.Context, tx *sqlx.Tx, st state, now time.Time) (Run, error) {
	r := Run{RunID: newRunID(), Schedule: st.Name, Slot: now, FiredAt: now, Attempt: 1, Manual: true, Command: st.Command, Payload: st.Payload}
	r.SlotID = st.Name + "@manual/" + r.RunID
	return s.recordRun(ctx, tx, r)
}

// change runs f on a schedule's row in one transaction.
func (s *Scheduler) change(ctx context.Context, verb, name string, f func(tx *sqlx.Tx, st state) error) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		st, found, err := s.load(ctx, tx, name)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: %q", ErrUnknownSchedule, name)
		}
		return f(tx, st)
	})
	if err != nil {
		return fmt.Errorf("schedule: %s %q: %w", verb, name, err)
	}
	return nil
}

// maxBackfill bounds the slots one Backfill fires.
const maxBackfill = 10_000

// Backfill runs the slots of a schedule in (from, to] that have no run
// yet, oldest first, each in a transaction of its own with its planned
// slot id, as if it had fired on time: for a schedule added after the
// fact, or slots a catch-up policy skipped. Slots already run are left
// alone, so backfilling twice runs nothing twice. It does not move the
// plan, and its runs do not count toward MaxRuns. Slots after the
// schedule's Until are not its slots and are not run. Like Trigger, it is
// asked for by name: a paused schedule's slots are run too, and it stays
// paused. to must not be in the future; at most 10,000 slots. It returns
// the runs it made.
func (s *Scheduler) Backfill(ctx context.Context, name string, from, to time.Time) ([]Run, error) {
	if to.After(s.clock.Now()) {
		return nil, fmt.Errorf("schedule: backfill %q: %s is in the future", name, tick.FormatTime(to))
	}
	var st state
	err := s.change(ctx, "backfill", name, func(_ *sqlx.Tx, got state) error { st = got; return nil })
	if err != nil {
		return nil, err
	}
	d, err := s.definition(st)
	if err != nil {
		return nil, fmt.Errorf("schedule: backfill %q: %w", name, err)
	}
	last := to
	if !d.Until.IsZero() && d.Until.Before(last) {
		last = d.Until // the schedule has no slot after Until
	}
	var slots []time.Time
	for at := d.Spec.Next(from); !at.IsZero() && !at.After(last); at = d.Spec.Next(at) {
		if len(slots) == maxBackfill {
			return nil, fmt.Errorf("schedule: backfill %q: more than %d slots in (%s, %s]", name, maxBackfill, tick.FormatTime(from), tick.FormatTime(to))
		}
		slots = append(slots, at)
	}
	var runs []Run
	for _, slot := range slots {
		var r Run
		err := s.inTx(ctx, func(tx *sqlx.Tx) error {
			var err error
			r, err = s.record(ctx, tx, st, slot, 1)
			return err
		})
		if err != nil {
			return runs, fmt.Errorf("schedule: backfill %q at %s: %w", name, tick.FormatTime(slot), err)
		}
		if r.RunID != "" {
			runs = append(runs, r)
		}
	}
	return runs, nil
}
