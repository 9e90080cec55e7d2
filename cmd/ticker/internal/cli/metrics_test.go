package cli_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/tick"
)

// scrape reads base/metrics and parses the Prometheus text.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// series finds the series of the family name whose labels include want
// (all of them, for no labels), failing the test when there is none.
func series(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := families[name]
	require.True(t, ok, "no family %s", name)
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			return m
		}
	}
	require.Failf(t, "no series", "%s%v in %v", name, want, f)
	return nil
}

// value is a counter's or a gauge's value.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	m := series(t, families, name, want)
	switch families[name].GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	require.Failf(t, "not a counter or a gauge", "%s is %v", name, families[name].GetType())
	return 0
}

// minutesIn lists the minute boundaries in (from, to].
func minutesIn(from, to time.Time) []time.Time {
	var out []time.Time
	for b := from.Truncate(time.Minute).Add(time.Minute); !b.After(to); b = b.Add(time.Minute) {
		out = append(out, b)
	}
	return out
}

// delays is what a histogram of the delays from each of boundaries to at
// holds, and the largest of them, in seconds.
type delays struct {
	count    uint64
	sum, max float64
}

func (d *delays) add(at time.Time, boundaries ...time.Time) {
	for _, b := range boundaries {
		s := at.Sub(b).Seconds()
		d.count++
		d.sum += s
		d.max = max(d.max, s)
	}
}

// "ticker run" on a fake clock exports, on /metrics, what the clock's
// advance makes of it: boundaries emitted per unit, a skipped boundary
// counted once and not as emitted, the lag from each boundary to its
// publication and from each slot to its run's firing (counts, sums and
// largest), the runs fired, the deliveries, and the to-do lists read from
// the database. The expected figures are worked out here from the
// advance alone.
func TestMetricsFollowTheFakeClock(t *testing.T) {
	t.Parallel()
	begin := time.Date(2026, 11, 21, 12, 58, 30, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(begin)
	db := filepath.Join(t.TempDir(), "passage.db")
	ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "* * * * *", "--command", "poll", "--catch-up", "all"))
	// The first run sets the cursors at the boundaries before begin:
	// minute 12:58, hour 12:00.
	r := startRun(t, clock, "--db", db, "--units", "minute,hour", "--catch-up", "minute=latest,hour=all", "--http", "127.0.0.1:0")
	defer func() { require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String()) }()

	var f clockFigures

	// One minute: 12:59 is emitted and its slot fired, 30 s late.
	require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
	now := clock.Now()
	passed := minutesIn(begin, now)
	f.minutes += len(passed)
	f.emittedMinutes = append(f.emittedMinutes, passed...)
	f.minuteLag.add(now, passed...)
	f.runs += len(passed)
	f.lateness.add(now, passed...)

	// Three minutes at once: the minute's catch-up is latest only, so
	// 13:02 is emitted and 13:00 and 13:01 are skipped; the hour catches
	// up 13:00 (all); the schedule's catch-up (all) fires every slot.
	before := now
	require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, 3*time.Minute, r.ticker))
	now = clock.Now()
	passed = minutesIn(before, now)
	last := passed[len(passed)-1]
	f.minutes++
	f.emittedMinutes = append(f.emittedMinutes, last)
	f.minuteLag.add(now, last)
	f.skipped += len(passed) - 1
	hour := now.Truncate(time.Hour)
	f.hours++
	f.hourLag.add(now, hour)
	f.runs += len(passed)
	f.lateness.add(now, passed...)

	// Every record on stdout: boundaries, the skip report, the runs.
	records := r.waitRecords(t, f.minutes+f.hours+1+f.runs)
	var gotMinutes []time.Time
	for _, rec := range records {
		if rec.Type == "MinuteHasPassed" {
			gotMinutes = append(gotMinutes, rec.Boundary.Time)
		}
	}
	sort.Slice(gotMinutes, func(i, j int) bool { return gotMinutes[i].Before(gotMinutes[j]) })
	require.True(t, slices.EqualFunc(f.emittedMinutes, gotMinutes, time.Time.Equal), "the oracle's minutes %v, the run's %v", f.emittedMinutes, gotMinutes)

	// The relay counts a delivery once the sink took it, after the line
	// is written.
	base := serverURL(t, r)
	var m map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		m = scrape(t, base)
		fam, ok := m["passage_delivery_records_delivered_total"]
		return ok && fam.GetMetric()[0].GetCounter().GetValue() == float64(len(records))
	}, 10*time.Second, 5*time.Millisecond)

	// Each figure is recorded once: by tick, not by the binary as well
	// (the registry would find a series collected twice, and say so).
	require.NotContains(t, r.stderr.String(), "collected before", "a series recorded twice")
	requireClockFigures(t, m, f, len(records))
}

// clockFigures is what TestMetricsFollowTheFakeClock expects /metrics to
// show, worked out from the fake clock's advance.
type clockFigures struct {
	minuteLag, hourLag, lateness  delays
	minutes, hours, skipped, runs int
	emittedMinutes                []time.Time
}

// requireClockFigures checks the families scraped against f, delivered
// being the records the stdout relay delivered.
func requireClockFigures(t *testing.T, m map[string]*dto.MetricFamily, f clockFigures, delivered int) {
	t.Helper()
	minute, hr := map[string]string{"unit": "minute"}, map[string]string{"unit": "hour"}
	require.Equal(t, float64(f.minutes), value(t, m, "passage_tick_boundaries_emitted_total", minute))
	require.Equal(t, float64(f.hours), value(t, m, "passage_tick_boundaries_emitted_total", hr))
	require.Equal(t, float64(f.skipped), value(t, m, "passage_tick_boundaries_skipped_total", minute))
	require.Zero(t, value(t, m, "passage_tick_boundaries_skipped_total", hr))
	require.Zero(t, value(t, m, "passage_tick_publish_failures_total", minute))
	require.Zero(t, value(t, m, "passage_tick_store_failures_total", nil))
	for _, c := range []struct {
		labels map[string]string
		want   delays
	}{{minute, f.minuteLag}, {hr, f.hourLag}} {
		h := series(t, m, "passage_tick_emission_lag_seconds", c.labels).GetHistogram()
		require.Equal(t, c.want.count, h.GetSampleCount(), "lag count %v", c.labels)
		require.InDelta(t, c.want.sum, h.GetSampleSum(), 1e-9, "lag sum %v", c.labels)
		require.Equal(t, c.want.max, value(t, m, "passage_tick_emission_lag_max_seconds", c.labels), "lag max %v", c.labels)
	}

	require.Equal(t, float64(f.runs), value(t, m, "passage_schedule_runs_fired_total", nil))
	h := series(t, m, "passage_schedule_run_lateness_seconds", nil).GetHistogram()
	require.Equal(t, f.lateness.count, h.GetSampleCount())
	require.InDelta(t, f.lateness.sum, h.GetSampleSum(), 1e-9)
	require.Equal(t, f.lateness.max, value(t, m, "passage_schedule_run_lateness_max_seconds", nil))

	stdout := map[string]string{"sink": "stdout"}
	require.Equal(t, uint64(delivered), series(t, m, "passage_delivery_lateness_seconds", stdout).GetHistogram().GetSampleCount())
	require.Zero(t, value(t, m, "passage_delivery_records_refused_total", stdout))
	require.Zero(t, value(t, m, "passage_delivery_records_parked_total", stdout))
	require.Zero(t, value(t, m, "passage_delivery_backlog", stdout))
	require.Zero(t, value(t, m, "passage_delivery_parked", stdout))

	// The schedules' next slots are a to-do list: poll's, 13:03, is not
	// due yet.
	schedules := map[string]string{"list": "passage-schedules"}
	require.Equal(t, 1.0, value(t, m, "passage_todolist_stored_backlog", schedules))
	require.Zero(t, value(t, m, "passage_todolist_stored_due", schedules))
	require.Zero(t, value(t, m, "passage_todolist_stored_parked", schedules))
	require.Equal(t, dto.MetricType_GAUGE, m["passage_todolist_stored_backlog"].GetType())
	require.Equal(t, dto.MetricType_COUNTER, m["passage_todolist_stored_completed_total"].GetType())
	for _, name := range []string{"passage_todolist_stored_completed_total", "passage_todolist_stored_failed_attempts_total", "passage_todolist_stored_parkings_total"} {
		series(t, m, name, schedules)
	}
}

// "ticker serve" answers /healthz while its database does, and exports on
// /metrics the to-do lists read from the database at each scrape (due
// by the serve's clock), and nothing of a ticker, which it does not run.
func TestServeExportsHealthAndTheListsOfItsDatabase(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	// pending-orders: items due 10 min and 1 min before start, both
	// parked at their first failure, and one due an hour after it.
	path := tickerDB(t, clock)
	s := startServe(t, clock, nil, "--db", path)
	require.Contains(t, s.stderr.String(), "/healthz and /metrics")

	code, body := httpGet(t, s.base+"/healthz")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "ok\n", body)

	orders := map[string]string{"list": "pending-orders"}
	m := scrape(t, s.base)
	require.Equal(t, 1.0, value(t, m, "passage_todolist_stored_backlog", orders))
	require.Zero(t, value(t, m, "passage_todolist_stored_due", orders))
	require.Equal(t, 2.0, value(t, m, "passage_todolist_stored_parked", orders))
	require.Equal(t, 2.0, value(t, m, "passage_todolist_stored_parkings_total", orders))
	for name := range m {
		require.NotContains(t, name, "passage_tick_", "serve runs no ticker")
	}

	// The third item falls due an hour later, by the serve's clock.
	clock.Advance(time.Hour)
	m = scrape(t, s.base)
	require.Equal(t, 1.0, value(t, m, "passage_todolist_stored_due", orders))
}
