package cli

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// metrics counts what the ticker does, for the Prometheus text format on
// /metrics. It is written by the ticker's observer and read by scrapes.
type metrics struct {
	mu       sync.Mutex
	emitted  map[tick.Unit]int64
	skipped  map[tick.Unit]int64
	failures map[tick.Unit]int64
	lagSum   map[tick.Unit]float64
	lagMax   map[tick.Unit]float64
	storeErr int64

	// The schedule runs this process fired and committed, and their
	// lateness: slot to fired_at (a jittered slot counts its jitter).
	runs                   int64
	runLateSum, runLateMax float64
}

// ranRun counts a committed schedule run; nil-safe for commands that keep
// no metrics.
func (m *metrics) ranRun(r schedule.Run) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	late := max(r.FiredAt.Sub(r.Slot), 0).Seconds()
	m.runs++
	m.runLateSum += late
	m.runLateMax = max(m.runLateMax, late)
}

// The metrics are per unit; the to-do list figures are read from the database
// at each scrape, so they cover the processors of every process.

func newMetrics() *metrics {
	return &metrics{
		emitted: map[tick.Unit]int64{}, skipped: map[tick.Unit]int64{}, failures: map[tick.Unit]int64{},
		lagSum: map[tick.Unit]float64{}, lagMax: map[tick.Unit]float64{},
	}
}

func (m *metrics) observer() tick.Observer {
	return tick.Observer{
		Emitted: func(e tick.Event, lag time.Duration) {
			m.mu.Lock()
			defer m.mu.Unlock()
			u := e.Unit()
			m.emitted[u]++
			m.lagSum[u] += lag.Seconds()
			m.lagMax[u] = max(m.lagMax[u], lag.Seconds())
		},
		Skipped: func(s tick.TicksSkipped) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.skipped[s.Unit] += s.Count
		},
		PublishFailed: func(u tick.Unit, _ time.Time, _ error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.failures[u]++
		},
		StoreFailed: func(error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.storeErr++
		},
	}
}

// handler serves /healthz and /metrics. Both only read: /healthz asks the
// ticker whether its last pass worked, pings the database and reads each
// sink's parked records and backlog; /metrics reads the to-do lists with
// plain SELECTs (readonly.go), never migrating or taking the write lock.
func (m *metrics) handler(ticker *tick.Ticker, db *sqldb.DB, out *delivery, clock clockwork.Clock) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := ticker.Health(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := db.PingContext(r.Context()); err != nil {
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := out.health(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		m.write(w)
		out.writeMetrics(r.Context(), w)
		lists, err := todolist.ReadStats(r.Context(), db, clock.Now())
		if err != nil {
			fmt.Fprintf(w, "# to-do lists unavailable: %v\n", err)
			return
		}
		writeListMetrics(w, lists)
	})
	return mux
}

// summary is the line "run --once" prints: what it emitted and where the
// cursors stand, or, on a first run, that it only recorded where they start.
func (m *metrics) summary(before, after map[tick.Unit]time.Time, loc *time.Location) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var emitted, skipped int64
	var perUnit, cursors, started []string
	for _, u := range tick.Units() {
		emitted += m.emitted[u]
		skipped += m.skipped[u]
		if m.emitted[u] > 0 {
			perUnit = append(perUnit, fmt.Sprintf("%s %d", u, m.emitted[u]))
		}
		c, ok := after[u]
		if !ok {
			continue
		}
		cursors = append(cursors, fmt.Sprintf("%s %s", u, tick.FormatTime(c.In(loc))))
		if _, had := before[u]; !had {
			started = append(started, string(u))
		}
	}
	noun := "events"
	if emitted == 1 {
		noun = "event"
	}
	line := fmt.Sprintf("once: emitted %d %s", emitted, noun)
	if len(perUnit) > 0 {
		line += " (" + strings.Join(perUnit, ", ") + ")"
	}
	if skipped > 0 {
		line += fmt.Sprintf(", skipped %d boundaries (reported as TicksSkipped)", skipped)
	}
	if len(started) > 0 {
		line += "; first run for " + strings.Join(started, ", ") + ": the cursor starts at the latest boundary and the next run emits what passes after it"
	}
	if len(cursors) > 0 {
		line += "; cursors at " + strings.Join(cursors, ", ")
	}
	return line + "; lease released"
}

func (m *metrics) write(w http.ResponseWriter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	series := []struct {
		name, help, kind string
		values           map[tick.Unit]float64
	}{
		{"passage_ticks_emitted_total", "Boundaries published.", "counter", floats(m.emitted)},
		{"passage_ticks_skipped_total", "Boundaries a catch-up policy did not emit (reported as TicksSkipped).", "counter", floats(m.skipped)},
		{"passage_publish_failures_total", "Failed attempts to record a boundary in the outbox (or to fire its schedules); the boundary is retried at the next wake-up.", "counter", floats(m.failures)},
		{"passage_emission_lag_seconds_sum", "Sum of the delays between a boundary and its publication.", "counter", m.lagSum},
		{"passage_emission_lag_seconds_count", "Boundaries whose delay is in the sum.", "counter", floats(m.emitted)},
		{"passage_emission_lag_seconds_max", "Largest delay between a boundary and its publication.", "gauge", m.lagMax},
	}
	for _, s := range series {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", s.name, s.help, s.name, s.kind)
		for _, u := range sortedUnits(s.values) {
			fmt.Fprintf(w, "%s{unit=%q} %g\n", s.name, u, s.values[u])
		}
	}
	fmt.Fprintf(w, "# HELP passage_store_failures_total Failed cursor or lease store calls.\n# TYPE passage_store_failures_total counter\npassage_store_failures_total %d\n", m.storeErr)
	fmt.Fprintf(w, "# HELP passage_schedule_runs_total Schedule runs this process fired and committed.\n# TYPE passage_schedule_runs_total counter\npassage_schedule_runs_total %d\n", m.runs)
	fmt.Fprintf(w, "# HELP passage_schedule_run_lateness_seconds_sum Sum of the delays between a run's slot and its firing.\n# TYPE passage_schedule_run_lateness_seconds_sum counter\npassage_schedule_run_lateness_seconds_sum %g\n", m.runLateSum)
	fmt.Fprintf(w, "# HELP passage_schedule_run_lateness_seconds_count Runs whose delay is in the sum.\n# TYPE passage_schedule_run_lateness_seconds_count counter\npassage_schedule_run_lateness_seconds_count %d\n", m.runs)
	fmt.Fprintf(w, "# HELP passage_schedule_run_lateness_seconds_max Largest delay between a run's slot and its firing.\n# TYPE passage_schedule_run_lateness_seconds_max gauge\npassage_schedule_run_lateness_seconds_max %g\n", m.runLateMax)
}

func writeListMetrics(w http.ResponseWriter, lists []todolist.ListStats) {
	gauges := []struct {
		name, help string
		value      func(todolist.Stats) float64
	}{
		{"passage_todo_pending", "Items waiting on a to-do list (not parked).", func(s todolist.Stats) float64 { return float64(s.Pending) }},
		{"passage_todo_due", "Pending items whose due time has come.", func(s todolist.Stats) float64 { return float64(s.Due) }},
		{"passage_todo_parked", "Items parked after too many failed attempts.", func(s todolist.Stats) float64 { return float64(s.Parked) }},
		{"passage_todo_completed_total", "Items processors completed and removed, by every process.", func(s todolist.Stats) float64 { return float64(s.Completed) }},
		{"passage_todo_failures_total", "Failed attempts recorded by processors (version conflicts excluded).", func(s todolist.Stats) float64 { return float64(s.Failures) }},
		{"passage_todo_parkings_total", "Times an item was parked.", func(s todolist.Stats) float64 { return float64(s.Parkings) }},
	}
	for _, g := range gauges {
		kind := "gauge"
		if strings.HasSuffix(g.name, "_total") {
			kind = "counter"
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", g.name, g.help, g.name, kind)
		for _, l := range lists {
			fmt.Fprintf(w, "%s{list=%q} %g\n", g.name, l.Name, g.value(l.Stats))
		}
	}
}

func floats(m map[tick.Unit]int64) map[tick.Unit]float64 {
	out := make(map[tick.Unit]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

func sortedUnits(m map[tick.Unit]float64) []tick.Unit {
	units := make([]tick.Unit, 0, len(m))
	for u := range m {
		units = append(units, u)
	}
	sort.Slice(units, func(i, j int) bool { return units[i] < units[j] })
	return units
}
