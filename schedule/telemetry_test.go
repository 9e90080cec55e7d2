package schedule_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// telemetryNames are the schedules of the telemetry scenario: a minute's
// cron caught up latest-only, the same failing each slot's first attempt,
// and the same jittered by up to 40 s and caught up in full.
var telemetryNames = []string{"minutely", "flaky", "jittered"}

// errFirstAttempt is what flaky's handler returns on a slot's first
// attempt.
var errFirstAttempt = errors.New("flaky: a slot's first attempt fails")

// expected is what the scenario's metrics must say, worked out by the
// test: per schedule, the runs that committed (read from the database),
// their lateness in seconds (from the fake clock's reading at each
// handler's start and each slot's due time, read from the to-do list),
// the slots skipped (counted from the clock's advance).
type expected struct {
	fired, skipped map[string]int64
	lateness       map[string][]float64
}

// scenario is a scheduler on a fake clock driven through the telemetry
// scenario, which tests then read the telemetry of.
type scenario struct {
	db    *sqlx.DB
	clock *clockwork.FakeClock
	n     node
	// starts is the fake clock's reading at each handler's start, by slot
	// id.
	mu     sync.Mutex
	starts map[string]time.Time
}

func newScenario(t *testing.T, db *sqlx.DB, opts ...schedule.Option) *scenario {
	t.Helper()
	sc := &scenario{db: db, clock: clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 0, 0, 30, 0, time.UTC)),
		starts: map[string]time.Time{}}
	rec := &recorder{fail: func(r schedule.Run) error {
		sc.mu.Lock()
		sc.starts[r.SlotID] = sc.clock.Now()
		sc.mu.Unlock()
		if r.Schedule == "flaky" && r.Attempt == 1 {
			return errFirstAttempt
		}
		return nil
	}}
	sc.n = newNode(t, db, sc.clock, rec, opts...)
	every := mustSpec(t)(schedule.Cron("* * * * *", nil))
	_, err := sc.n.s.Sync(context.Background(),
		schedule.Definition{Name: "minutely", Spec: every},
		schedule.Definition{Name: "flaky", Spec: every},
		schedule.Definition{Name: "jittered", Spec: every, Jitter: jitteredJitter, CatchUp: tick.All{Window: time.Hour, Max: 100}})
	require.NoError(t, err)
	return sc
}

// jitteredJitter is the scenario's jittered schedule's Jitter.
const jitteredJitter = 40 * time.Second

// pass works what is due, as "ticker run" does at a boundary: one Process
// call (jittered catches up every missed slot in it).
func (sc *scenario) pass(t *testing.T, ctx context.Context) {
	t.Helper()
	_, err := sc.n.p.Process(ctx, sc.clock.Now())
	require.NoError(t, err)
}

// run drives the scenario, ctx given to every pass, and returns what its
// telemetry must say.
//
//	00:01:50  every slot of 00:01 fires, 50 s late (jittered's by less);
//	          flaky's first attempt fails, so the batch fires again slot
//	          by slot and flaky's slot is retried after the 1 s backoff
//	00:01:55  flaky's slot fires, 55 s late
//	00:06:55  after 5 minutes down: minutely and flaky fire 00:06 and skip
//	          00:02 to 00:05 (one report of 4 slots each; flaky's is
//	          undone with its failing attempt); jittered fires each slot
//	00:06:57  flaky's 00:06 fires, and its skips are reported
//	Trigger   a manual run of minutely: fired, not measured for lateness
func (sc *scenario) run(t *testing.T, ctx context.Context) expected {
	t.Helper()
	sc.clock.Advance(80 * time.Second)
	sc.pass(t, ctx)
	sc.clock.Advance(5 * time.Second)
	sc.pass(t, ctx)
	down := sc.clock.Now()
	sc.clock.Advance(5 * time.Minute)
	sc.pass(t, ctx)
	missed := expectedSlots(mustSpec(t)(schedule.Cron("* * * * *", nil)), down, sc.clock.Now())
	sc.clock.Advance(2 * time.Second)
	sc.pass(t, ctx)
	_, err := sc.n.s.Trigger(context.Background(), "minutely") // an operator's, outside any tick
	require.NoError(t, err)

	want := expected{fired: map[string]int64{}, skipped: map[string]int64{}, lateness: map[string][]float64{}}
	jittered := 0
	// Latest-only fires the last of the missed slots and skips the others.
	want.skipped["minutely"] = int64(len(missed) - 1)
	want.skipped["flaky"] = int64(len(missed) - 1)
	for _, name := range telemetryNames {
		runs, err := schedule.ReadRuns(ctx, sc.db, name, 100)
		require.NoError(t, err)
		want.fired[name] = int64(len(runs))
		for _, r := range runs {
			if r.Manual {
				continue
			}
			due := r.Slot
			if name == "jittered" {
				// As Definition.Jitter documents it (clockskew_test.go).
				due = jitteredDue(name, r.Slot, jitteredJitter)
				if !due.Equal(r.Slot) {
					jittered++
				}
			}
			start, ok := sc.starts[r.SlotID]
			require.True(t, ok, "no handler start for %s", r.SlotID)
			want.lateness[name] = append(want.lateness[name], start.Sub(due).Seconds())
		}
	}
	// The scenario is the one described: what was fired and skipped, and
	// jitter that moved due times off their slots.
	require.Equal(t, map[string]int64{"minutely": 3, "flaky": 2, "jittered": 6}, want.fired)
	require.Equal(t, int64(4), want.skipped["minutely"])
	stored, err := sc.n.s.List(ctx)
	require.NoError(t, err)
	for _, st := range stored {
		require.Equal(t, want.skipped[st.Name], st.Skipped, "%s's skipped slots as stored", st.Name)
	}
	require.Positive(t, jittered, "jitter moved a due time off its slot")
	return want
}

// series are one collection of the package's metrics: each instrument's
// data points by the schedule they name ("" for none). No run's or slot's
// id is ever an attribute: the schedule's name is the one there is.
type series struct {
	counts    map[string]map[string]int64
	histogram map[string]metricdata.HistogramDataPoint[float64]
}

func collect(t *testing.T, reader *sdkmetric.ManualReader) series {
	t.Helper()
	c := telemetrytest.Collect(t, reader, "github.com/passage-of-time/passage/schedule")
	out := series{counts: map[string]map[string]int64{}, histogram: map[string]metricdata.HistogramDataPoint[float64]{}}
	for name, m := range c {
		switch m.Data.(type) {
		case metricdata.Sum[int64]:
			out.counts[name] = c.Counts(t, name, "schedule")
		case metricdata.Histogram[float64]:
			require.Equal(t, "passage.schedule.run.lateness", name)
			require.Equal(t, "s", m.Unit)
			out.histogram = c.Histograms(t, name, "schedule")
		default:
			require.Failf(t, "unexpected instrument", "%s is a %T", name, m.Data)
		}
	}
	return out
}

// The metrics read back after a fake clock's advance say what the
// scheduler did: the runs that committed (a run undone with its batch
// counts once, when it commits; a manual run counts), each slot skipped
// once (a report of 4 slots counts 4), and each planned run's lateness
// from its slot's due time — the slot plus its jitter — to its handler's
// start, as worked out here from the fake clock and the to-do list.
func TestMetricsCountRunsSkipsAndLateness(t *testing.T) {
	t.Parallel()
	for _, be := range sqldbtest.Backends() {
		t.Run(be.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := be.Open(t)
			mp, reader := telemetrytest.MeterReader(t)
			sc := newScenario(t, db.DB, schedule.WithMeterProvider(mp))
			want := sc.run(t, context.Background())
			got := collect(t, reader)
			require.Equal(t, want.fired, got.counts["passage.schedule.runs.fired"], "runs fired")
			require.Equal(t, map[string]int64{"minutely": 4, "flaky": 4}, got.counts["passage.schedule.runs.skipped"], "slots skipped")
			require.Equal(t, want.skipped["minutely"], got.counts["passage.schedule.runs.skipped"]["minutely"])
			require.Len(t, got.histogram, len(telemetryNames))
			for _, name := range telemetryNames {
				requireLateness(t, want.lateness[name], got.histogram[name], name)
			}
			// The schedules' to-do list records with the same provider.
			scopes := telemetrytest.Scopes(t, reader)
			require.True(t, scopes["github.com/passage-of-time/passage/todolist"], "the to-do list's metrics: %v", scopes)
		})
	}
}

// WithMetricsPerSchedule(false) adds every schedule up in one series per
// instrument, without attributes.
func TestMetricsWithoutTheScheduleAttributeAddUp(t *testing.T) {
	t.Parallel()
	for _, be := range sqldbtest.Backends() {
		t.Run(be.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := be.Open(t)
			mp, reader := telemetrytest.MeterReader(t)
			sc := newScenario(t, db.DB, schedule.WithMeterProvider(mp), schedule.WithMetricsPerSchedule(false))
			want := sc.run(t, context.Background())
			got := collect(t, reader)
			var fired, skipped int64
			var lateness []float64
			for _, name := range telemetryNames {
				fired += want.fired[name]
				skipped += want.skipped[name]
				lateness = append(lateness, want.lateness[name]...)
			}
			require.Equal(t, map[string]int64{"": fired}, got.counts["passage.schedule.runs.fired"])
			require.Equal(t, map[string]int64{"": skipped}, got.counts["passage.schedule.runs.skipped"])
			require.Len(t, got.histogram, 1)
			requireLateness(t, lateness, got.histogram[""], "every schedule")
		})
	}
}

// requireLateness checks a histogram's data point against the lateness
// of each run, in seconds.
func requireLateness(t *testing.T, want []float64, got metricdata.HistogramDataPoint[float64], name string) {
	t.Helper()
	var sum float64
	lo, hi := want[0], want[0]
	for _, s := range want {
		sum += s
		lo, hi = min(lo, s), max(hi, s)
	}
	require.Equal(t, uint64(len(want)), got.Count, "%s: runs measured", name)
	require.InDelta(t, sum, got.Sum, 1e-9, "%s: lateness sum, want %v", name, want)
	gotMin, _ := got.Min.Value()
	gotMax, _ := got.Max.Value()
	require.InDelta(t, lo, gotMin, 1e-9, "%s: least lateness", name)
	require.InDelta(t, hi, gotMax, 1e-9, "%s: greatest lateness", name)
}

// Each run's handler runs in a span of its own, "schedule.run <name>",
// linked to the tick's span the processor was given (through the to-do
// list's batch span), that names the
// schedule, the slot, the run and the attempt; a failing attempt's span
// has the error status and the error, and a run its batch undid has a
// span of its own, under a run id that was never recorded.
func TestASpanPerRun(t *testing.T) {
	t.Parallel()
	for _, be := range sqldbtest.Backends() {
		t.Run(be.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := be.Open(t)
			tp, exp := telemetrytest.SpanRecorder(t)
			sc := newScenario(t, db.DB, schedule.WithTracerProvider(tp))
			ctx, tickSpan := tp.Tracer("test").Start(context.Background(), "tick")
			sc.run(t, ctx)
			tickSpan.End()

			spans := exp.GetSpans()
			byID := map[trace.SpanID]tracetest.SpanStub{}
			runs := map[string][]tracetest.SpanStub{} // by run id
			for _, s := range spans {
				byID[s.SpanContext.SpanID()] = s
				if id, ok := attributeOf(s, "passage.schedule.run.id"); ok {
					runs[id] = append(runs[id], s)
				}
			}
			failed := 0
			for _, name := range telemetryNames {
				records, err := schedule.ReadRuns(context.Background(), db.DB, name, 100)
				require.NoError(t, err)
				for _, r := range records {
					require.Len(t, runs[r.RunID], 1, "one span for run %s (%s)", r.RunID, r.SlotID)
					s := runs[r.RunID][0]
					delete(runs, r.RunID)
					require.Equal(t, "schedule.run "+name, s.Name)
					requireAttribute(t, s, "passage.schedule.name", name)
					requireAttribute(t, s, "passage.schedule.slot", timefmt.Format(r.Slot))
					requireAttribute(t, s, "passage.schedule.slot.id", r.SlotID)
					requireAttribute(t, s, "passage.schedule.run.attempt", int64(r.Attempt))
					require.Equal(t, codes.Unset, s.Status.Code, "%s's span", r.SlotID)
					if r.Manual {
						requireAttribute(t, s, "passage.schedule.run.manual", true)
						require.Empty(t, s.Links, "a manual run was caused by no tick")
						continue
					}
					require.Equal(t, sc.starts[r.SlotID], s.StartTime, "%s's span starts with its handler, by the fake clock", r.SlotID)
					require.True(t, linksTo(s, tickSpan.SpanContext(), byID), "%s's span is linked to the tick's: %v", r.SlotID, s.Links)
					// Through the batch of the schedules' to-do list, which
					// traces with the scheduler's provider.
					require.Len(t, s.Links, 1)
					require.Equal(t, "todolist.batch passage-schedules", byID[s.Links[0].SpanContext.SpanID()].Name)
					require.NotEqual(t, tickSpan.SpanContext().TraceID(), s.SpanContext.TraceID(), "a trace of its own")
				}
			}
			// What is left are the runs no transaction committed: flaky's
			// first attempts, failed, and the runs of their batches.
			for id, ss := range runs {
				require.Len(t, ss, 1, "one span for run %s", id)
				s := ss[0]
				if s.Status.Code != codes.Error {
					continue
				}
				failed++
				require.Equal(t, "schedule.run flaky", s.Name)
				requireAttribute(t, s, "passage.schedule.run.attempt", int64(1))
				require.Equal(t, errFirstAttempt.Error(), s.Status.Description)
				require.Len(t, s.Events, 1)
				require.Equal(t, "exception", s.Events[0].Name)
			}
			require.Equal(t, 2, failed, "flaky's two first attempts failed")
		})
	}
}

func attributeOf(s tracetest.SpanStub, key string) (string, bool) {
	v, ok := telemetrytest.Attrs(s)[attribute.Key(key)]
	return v.String(), ok
}

func requireAttribute(t *testing.T, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	v, ok := telemetrytest.Attrs(s)[attribute.Key(key)]
	require.True(t, ok, "%s has no %s: %v", s.Name, key, s.Attributes)
	require.Equal(t, want, v.AsInterface(), "%s of %s", key, s.Name)
}

// linksTo reports whether s is linked to the span sc, at once or through
// the spans it is linked to (the to-do list's batch span, when the list
// traces its batches, is linked to the tick's).
func linksTo(s tracetest.SpanStub, sc trace.SpanContext, byID map[trace.SpanID]tracetest.SpanStub) bool {
	for _, l := range s.Links {
		if l.SpanContext.Equal(sc) {
			return true
		}
		if next, ok := byID[l.SpanContext.SpanID()]; ok && linksTo(next, sc, byID) {
			return true
		}
	}
	return false
}
