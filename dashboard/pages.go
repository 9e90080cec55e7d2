package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
)

// --- schedules

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

// scheduleRuns is how many runs a schedule's own page shows and charts.
const scheduleRuns = 100

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

// link is the path of page n with this page's query, filter and order.
func (v schedulesView) link(n int) string {
	return pageLink("/schedules", n, map[string]string{"q": v.Query, "only": v.Only, "sort": v.Sort})
}

func runViews(runs []schedule.RunRecord, loc *time.Location) []runView {
	out := []runView{}
	for _, r := range runs {
		out = append(out, runView{RunID: r.RunID, SlotID: r.SlotID, Slot: Time{Time: r.Slot.In(loc)}, FiredAt: Time{Time: r.FiredAt.In(loc)},
			Attempt: r.Attempt, Manual: r.Manual, Outcome: r.Outcome()})
	}
	return out
}

func (d *Dashboard) schedulesPage(w http.ResponseWriter, r *http.Request) {
	s, code, err := d.readSchedules(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	d.render(w, r, "schedules", "Schedules", s)
}

// --- workflows

type instanceView struct {
	ID           string `json:"id"`
	Workflow     string `json:"workflow"`
	State        string `json:"state"`
	StartedAt    *Time  `json:"started_at"`
	WaitingUntil *Time  `json:"waiting_until"`
	Error        string `json:"error"`
	Events       int64  `json:"events"`
}

func (d *Dashboard) instance(s orchestration.Status) instanceView {
	v := instanceView{ID: s.Instance, Workflow: s.Workflow, State: string(s.State), Error: s.Error, Events: s.Events}
	if !s.StartedAt.IsZero() {
		v.StartedAt = TimeOf(s.StartedAt.In(d.loc))
	}
	if !s.WaitingUntil.IsZero() {
		v.WaitingUntil = TimeOf(s.WaitingUntil.In(d.loc))
	}
	return v
}

type eventView struct {
	Version    int64           `json:"version"`
	Type       string          `json:"type"`
	RecordedAt Time            `json:"recorded_at"`
	Summary    string          `json:"summary"`
	Data       json.RawMessage `json:"data"`
}

type workflowView struct {
	Instance instanceView `json:"instance"`
	History  []eventView  `json:"history"`
}

func (d *Dashboard) readWorkflow(r *http.Request) (workflowView, int, error) {
	id := r.PathValue("id")
	history, err := orchestration.ReadHistory(r.Context(), d.db, id)
	switch {
	case errors.Is(err, orchestration.ErrInvalidArgument):
		return workflowView{}, http.StatusNotFound, fmt.Errorf("no workflow instance %q: %w", id, err)
	case err != nil:
		return workflowView{}, http.StatusInternalServerError, err
	case len(history) == 0:
		return workflowView{}, http.StatusNotFound, fmt.Errorf("no workflow instance %q", id)
	}
	v := workflowView{Instance: d.instance(orchestration.StatusOf(id, history))}
	for _, h := range history {
		v.History = append(v.History, eventView{Version: h.Version, Type: h.Type, RecordedAt: Time{Time: h.RecordedAt.In(d.loc)}, Summary: eventLine(h, d.loc), Data: h.Data})
	}
	return v, 0, nil
}

// workflowData is the instance's page: the instance, and the signal form
// as it was typed when a signal failed.
type workflowData struct {
	workflowView
	Signal signalData
}

type signalData struct {
	Name, Payload, Error string
}

func (d *Dashboard) workflowPage(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflow(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	d.render(w, r, "workflow", v.Instance.ID, workflowData{workflowView: v})
}

// eventLine is the timeline's line for a history event: what
// `ticker workflow show` prints, cut short so that a large payload does
// not swamp the page (the event's JSON is shown beside it).
func eventLine(h orchestration.HistoryEvent, loc *time.Location) string {
	const limit = 200
	line := h.Describe(loc)
	if len(line) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut] + "…"
	}
	return line
}

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

func (d *Dashboard) confirmCancel(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflow(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	id := v.Instance.ID
	if v.Instance.State != string(orchestration.Running) {
		d.fail(w, r, http.StatusConflict, fmt.Errorf("%s is %s: nothing would cancel it", id, v.Instance.State))
		return
	}
	d.confirm(w, r, "Cancel "+id, confirmData{Question: "Cancel the workflow instance", Name: id,
		Button: "Yes, cancel it", Action: itemPath("workflows", id, "/cancel"), Back: itemPath("workflows", id, "")})
}
