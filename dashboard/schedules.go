package dashboard

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/schedule"
)

// schedulesView is a page of schedules, as the page and the API show it.
type schedulesView struct {
	Schedules []scheduleView `json:"schedules"`
	// Total counts the schedules ?q= and ?only= keep; Page is this page's
	// number from 1, Pages how many there are.
	Total int `json:"total"`
	Page  int `json:"page"`
	Pages int `json:"pages"`
	// Query, Only and Sort are the request's ?q=, ?only= and ?sort=.
	Query string `json:"q"`
	Only  string `json:"only"`
	Sort  string `json:"sort"`
	// Prev and Next are the links (below the base path) to the pages
	// before and after, "" at either end.
	Prev string `json:"prev"`
	Next string `json:"next"`
}

// schedulesPageSize is how many schedules a page shows.
const schedulesPageSize = 50

// readSchedules reads the page of schedules ?page=, ?q=, ?only= and
// ?sort= select: one statement (schedule.ReadPage), however many
// schedules there are.
func (d *Dashboard) readSchedules(r *http.Request) (schedulesView, int, error) {
	q := r.URL.Query()
	v := schedulesView{Schedules: []scheduleView{}, Page: 1, Query: q.Get("q"), Only: q.Get("only"), Sort: q.Get("sort")}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > math.MaxInt32/schedulesPageSize {
			return v, http.StatusBadRequest, fmt.Errorf("?page=%s: want a page number from 1", s)
		}
		v.Page = n
	}
	only := schedule.PageFilter(v.Only)
	if !slices.Contains([]schedule.PageFilter{schedule.AllSchedules, schedule.Overdue, schedule.Failing, schedule.PausedOnly}, only) {
		return v, http.StatusBadRequest, fmt.Errorf("?only=%s: want overdue, failing or paused", v.Only)
	}
	sort := schedule.PageSort(v.Sort)
	if !slices.Contains([]schedule.PageSort{"", schedule.ByName, schedule.ByNext, schedule.ByAttempts, schedule.ByRuns}, sort) {
		return v, http.StatusBadRequest, fmt.Errorf("?sort=%s: want name, next, attempts or runs", v.Sort)
	}
	now := d.clock.Now()
	page, err := schedule.ReadPage(r.Context(), d.db, schedule.PageQuery{Match: v.Query, Filter: only, Sort: sort,
		Offset: (v.Page - 1) * schedulesPageSize, Limit: schedulesPageSize, Runs: lastRuns, Now: now, Grace: scheduleGrace})
	if err != nil {
		return v, http.StatusInternalServerError, err
	}
	for _, s := range page.Rows {
		v.Schedules = append(v.Schedules, d.scheduleView(s, now))
	}
	v.Total = page.Total
	v.Pages = max(1, (v.Total+schedulesPageSize-1)/schedulesPageSize)
	if v.Page > 1 {
		v.Prev = v.link(v.Page - 1)
	}
	if v.Page < v.Pages {
		v.Next = v.link(v.Page + 1)
	}
	return v, 0, nil
}

// link is the path of page n with this page's query, filter and order.
func (v schedulesView) link(n int) string {
	return pageLink("/schedules", n, map[string]string{"q": v.Query, "only": v.Only, "sort": v.Sort})
}

// schedulesPage shows a page of schedules (readSchedules).
func (d *Dashboard) schedulesPage(w http.ResponseWriter, r *http.Request) {
	s, code, err := d.readSchedules(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	d.render(w, r, "schedules", "Schedules", s)
}

// scheduleView is a schedule as the schedules page, its own page and the
// API show it.
type scheduleView struct {
	Name    string    `json:"name"`
	Spec    string    `json:"spec"`
	Zone    string    `json:"zone"`
	Command string    `json:"command"`
	Paused  bool      `json:"paused"`
	Next    *Time     `json:"next_slot"`
	Runs    int64     `json:"runs"`
	Skipped int64     `json:"skipped"`
	Open    int       `json:"open_runs"`
	Last    []runView `json:"last_runs"`
	// FailedAttempts counts the failed attempts at the next slot (each
	// rolled back, so no run records them); LastError is the latest's,
	// RetryAt when the slot is tried again, Parked when it is not.
	FailedAttempts int    `json:"failed_attempts"`
	LastError      string `json:"last_error"`
	RetryAt        *Time  `json:"retry_at"`
	Parked         bool   `json:"parked"`
	// Overdue is how bad the next slot's lateness is ("", "amber" or
	// "red": see the thresholds in trouble.go).
	Overdue string `json:"overdue"`
}

// runView is one run of a schedule as the pages and the API show it.
type runView struct {
	RunID   string `json:"run_id"`
	SlotID  string `json:"slot_id"`
	Slot    Time   `json:"slot"`
	FiredAt Time   `json:"fired_at"`
	Attempt int    `json:"attempt"`
	Manual  bool   `json:"manual"`
	Outcome string `json:"outcome"`
}

// lastRuns is how many runs a schedule shows.
const lastRuns = 5

// scheduleView is a schedule as the pages and the API show it, its
// lateness judged at now.
func (d *Dashboard) scheduleView(s schedule.PageRow, now time.Time) scheduleView {
	sv := scheduleView{Name: s.Name, Spec: s.Spec, Zone: s.Zone.String(), Command: s.Command, Paused: s.Paused,
		Next: TimeOf(s.Next), Runs: s.Runs, Skipped: s.Skipped, Open: s.Open, Last: runViews(s.Last, s.Zone),
		FailedAttempts: s.Attempts, LastError: s.LastError, RetryAt: TimeOf(s.RetryAt), Parked: s.Parked}
	if !s.Paused && !s.Next.IsZero() {
		sv.Overdue = scheduleLateness(now.Sub(s.Next.Add(s.Jitter)))
	}
	return sv
}

// runViews are runs shown in loc, the schedule's zone.
func runViews(runs []schedule.RunRecord, loc *time.Location) []runView {
	out := []runView{}
	for _, r := range runs {
		out = append(out, runView{RunID: r.RunID, SlotID: r.SlotID, Slot: Time{Time: r.Slot.In(loc)}, FiredAt: Time{Time: r.FiredAt.In(loc)},
			Attempt: r.Attempt, Manual: r.Manual, Outcome: r.Outcome()})
	}
	return out
}

// scheduleRuns is how many runs a schedule's own page shows and charts.
const scheduleRuns = 100

// scheduleData is one schedule's page.
type scheduleData struct {
	Schedule scheduleView
	// Lateness charts how late its planned runs fired (fired_at − slot).
	Lateness template.HTML
}

// schedulePage is one schedule: what the schedules page shows of it,
// with its last 100 runs and a chart of how late they fired.
func (d *Dashboard) schedulePage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	now := d.clock.Now()
	page, err := schedule.ReadPage(r.Context(), d.db, schedule.PageQuery{Name: name, Limit: 1, Runs: scheduleRuns, Now: now, Grace: scheduleGrace})
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if len(page.Rows) == 0 {
		d.fail(w, r, http.StatusNotFound, fmt.Errorf("no schedule named %q", name))
		return
	}
	s := page.Rows[0]
	v := d.scheduleView(s, now)
	// Oldest first, planned runs only: a manual run has no slot to be
	// late for.
	var late []int
	var slots []time.Time
	for i := len(s.Last) - 1; i >= 0; i-- {
		if run := s.Last[i]; !run.Manual {
			late = append(late, int(run.FiredAt.Sub(run.Slot)/time.Second))
			slots = append(slots, run.Slot)
		}
	}
	chart := template.HTML(`<p class="empty">No planned runs yet.</p>`)
	if len(late) > 0 {
		chart = barChart("seconds from slot to firing, last runs", late, func(i int) string { return slots[i].Format("01-02 15:04") }, max(1, len(late)/6))
	}
	d.render(w, r, "schedule", s.Name, scheduleData{Schedule: v, Lateness: chart})
}

// confirmTrigger asks before triggering the schedule (its Trigger now
// button opens it); a schedule that does not exist is a 404.
func (d *Dashboard) confirmTrigger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	stored, err := schedule.ReadSchedules(r.Context(), d.db)
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if !slices.ContainsFunc(stored, func(s schedule.Stored) bool { return s.Name == name }) {
		d.fail(w, r, http.StatusNotFound, fmt.Errorf("no schedule named %q", name))
		return
	}
	d.confirm(w, r, "Trigger "+name, confirmData{Question: "Start a run now, outside the schedule, of", Name: name,
		Button: "Yes, trigger it now", Action: itemPath("schedules", name, "/trigger"), Back: "/schedules"})
}

// apiSchedules is the page of schedules the schedules page reads, read by
// the same function from the same parameters (readSchedules).
func (d *Dashboard) apiSchedules(w http.ResponseWriter, r *http.Request) {
	s, code, err := d.readSchedules(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// apiRuns is a schedule's latest runs (?limit=, 50 unless given), newest
// slot first; a schedule that does not exist is a 404.
func (d *Dashboard) apiRuns(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	limit := pageSize
	if s := r.URL.Query().Get("limit"); s != "" {
		var err error
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > schedule.MaxRunsRead {
			d.fail(w, r, http.StatusBadRequest, fmt.Errorf("?limit=%s: want 1 to %d", s, schedule.MaxRunsRead))
			return
		}
	}
	all, err := schedule.ReadSchedules(r.Context(), d.db)
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	for _, s := range all {
		if s.Name != name {
			continue
		}
		runs, err := schedule.ReadRuns(r.Context(), d.db, name, limit)
		if err != nil {
			d.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, runViews(runs, s.Zone))
		return
	}
	d.fail(w, r, http.StatusNotFound, fmt.Errorf("no schedule named %q", name))
}

// refuseTriggers is the handler of the scheduler the dashboard opens when
// it was given none: nobody would receive a triggered run's command.
func refuseTriggers(context.Context, *sqlx.Tx, schedule.Run) error {
	return errors.New("dashboard: this dashboard has no handler for triggered runs (pass WithScheduler)")
}

// schedules is the scheduler the actions go through: the one given
// (WithScheduler), else one opened on the database at the first action.
func (d *Dashboard) schedules(ctx context.Context) (*schedule.Scheduler, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.scheduler == nil {
		s, err := schedule.Open(ctx, d.db, refuseTriggers, schedule.WithClock(d.clock))
		if err != nil {
			return nil, err
		}
		d.scheduler = s
	}
	return d.scheduler, nil
}

// scheduleAction is the schedules' actions: pause, resume and trigger.
func (d *Dashboard) scheduleAction(r *http.Request) (string, string, int, error) {
	name, verb := r.PathValue("name"), r.PathValue("verb")
	const back = "/schedules"
	s, err := d.schedules(r.Context())
	if err != nil {
		return "", back, http.StatusInternalServerError, err
	}
	switch verb {
	case "pause":
		err = s.Pause(r.Context(), name)
	case "resume":
		err = s.Resume(r.Context(), name)
	case "trigger":
		var run schedule.Run
		if run, err = s.Trigger(r.Context(), name); err == nil {
			return fmt.Sprintf("triggered %s: run %s%s", name, run.RunID, d.triggerNote), back, 0, nil
		}
	default:
		return "", back, http.StatusNotFound, fmt.Errorf("no schedule action %q: want pause, resume or trigger", verb)
	}
	if errors.Is(err, schedule.ErrUnknownSchedule) {
		return "", back, http.StatusNotFound, err
	}
	if err != nil {
		return "", back, http.StatusInternalServerError, err
	}
	return map[string]string{"pause": "paused ", "resume": "resumed "}[verb] + name, back, 0, nil
}
