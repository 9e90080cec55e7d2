package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// pageSize is the items or instances a page shows.
const pageSize = 50

// view is what every page's layout needs, beside the page's own data.
type view struct {
	Title, Nav string
	// Now is the page's instant as its header prints it; Clock is the
	// same now, which the page's relative times are measured from.
	Now     string
	Clock   clock
	Refresh int
	// Writable is true when an admin token is configured; Admin when
	// this request proved it knows it, so action buttons show.
	Writable, Admin bool
	Done            string
	// Path is the page's own, below Base: where log in and out return.
	Path string
	// Base is the path the dashboard is served under (WithBasePath),
	// "" at the root; every link starts with it.
	Base string
	// Trouble is the summary at the top of the page (nil on the pages
	// that ask before an action and on errors).
	Trouble *summary
	Data    any
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	d.renderStatus(w, r, name, title, data, nil)
}

// renderStatus renders a page whose data came with the status st (nil
// when it did not read it), which the summary then reads from.
func (d *Dashboard) renderStatus(w http.ResponseWriter, r *http.Request, name, title string, data any, st *Status) {
	v := d.viewOf(r, name, title, data)
	if st != nil {
		v.Clock.Now = st.Now.Time
	}
	v.Trouble = d.summarize(r.Context(), v.Clock.Now, st)
	d.write(w, http.StatusOK, name, v)
}

func (d *Dashboard) viewOf(r *http.Request, name, title string, data any) view {
	now := d.clock.Now().In(d.loc)
	return view{Title: title, Nav: name, Now: exact(now), Clock: clock{Now: now}, Refresh: int(d.refresh.Seconds()),
		Writable: d.token != "", Admin: d.admin(r), Done: d.doneOf(r), Path: r.URL.RequestURI(), Base: d.base, Data: data}
}

func (d *Dashboard) write(w http.ResponseWriter, code int, name string, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := d.pages[name].ExecuteTemplate(w, "layout", v); err != nil {
		d.logger.Error("dashboard: render", "page", name, "error", err)
	}
}

func isAPI(r *http.Request) bool {
	return len(r.URL.Path) >= 5 && r.URL.Path[:5] == "/api/" || r.Header.Get("Authorization") != ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// --- tickers

type unitRow struct {
	UnitStatus
	Lag    string
	Counts *TickerCounts
	// Level is how bad its lag is ("", amber, red: trouble.go).
	Level string
}

type tickersData struct {
	Status   Status
	Units    []unitRow
	Counted  bool
	LeaseFor string
	// LeaseLevel is how bad the lease's state is ("" while live).
	LeaseLevel string
	Chart      template.HTML
}

func (d *Dashboard) tickersPage(w http.ResponseWriter, r *http.Request) {
	st, err := ReadStatus(r.Context(), d.db, d.clock.Now(), d.loc)
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	data := tickersData{Status: st, Chart: lagChart(d.lag.all(), d.loc)}
	var counts map[tick.Unit]TickerCounts
	if d.counts != nil {
		counts, data.Counted = d.counts(), true
	}
	for _, u := range st.Units {
		row := unitRow{UnitStatus: u, Lag: "0s"}
		if late := st.Now.Sub(u.Next.Time); late > 0 {
			row.Lag = late.Round(time.Second).String()
			row.Level = lateness(late, tickerGrace, tickerRed)
		}
		if c, ok := counts[u.Unit]; ok {
			row.Counts = &c
			if c.PublishFailures > 0 {
				row.Level = red
			}
		}
		data.Units = append(data.Units, row)
	}
	if st.Lease != nil {
		data.LeaseFor = st.Lease.Expires.Sub(st.Now.Time).Round(time.Second).String()
		if !st.Lease.Live {
			data.LeaseLevel = worse(amber, lateness(st.Now.Sub(st.Lease.Expires.Time), leaseGrace, leaseGrace))
		}
	}
	d.renderStatus(w, r, "tickers", "Tickers", data, &st)
}

// --- to-do lists

// listView is one list's page and its API answer.
type listView struct {
	Stats ListStatus `json:"stats"`
	// DueNext24h counts pending items by the hour they may next be
	// claimed, from the current hour on.
	DueNext24h []int `json:"due_next_24h"`
	From       Time  `json:"from"`
}

// itemView is an item as the pages and the API show it.
type itemView struct {
	ID          string `json:"id"`
	Due         Time   `json:"due"`
	NextAttempt Time   `json:"next_attempt"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error"`
	Parked      bool   `json:"parked"`
	Claimed     bool   `json:"claimed"`
}

type itemsView struct {
	Items []itemView `json:"items"`
	// Next is the cursor of the following page (its ?after=), "" on the
	// last page.
	Next string `json:"next"`
}

// readList reads a list's counts and chart; a list that does not exist
// is a 404, a bad name a 400.
func (d *Dashboard) readList(r *http.Request) (listView, int, error) {
	name := r.PathValue("name")
	now := d.clock.Now().In(d.loc)
	stats, ok, err := todolist.ReadListStats(r.Context(), d.db, name, now)
	switch {
	case errors.Is(err, todolist.ErrInvalidName):
		return listView{}, http.StatusNotFound, fmt.Errorf("no to-do list named %q: %w", name, err)
	case err != nil:
		return listView{}, http.StatusInternalServerError, err
	case !ok:
		return listView{}, http.StatusNotFound, fmt.Errorf("no to-do list named %q", name)
	}
	from := now.Truncate(time.Hour)
	due, err := todolist.ReadDueCounts(r.Context(), d.db, name, from, time.Hour, 24)
	if err != nil {
		return listView{}, http.StatusInternalServerError, err
	}
	return listView{Stats: listStatus(stats, now, d.loc), DueNext24h: due, From: Time{Time: from}}, 0, nil
}

// readItems reads the page of items ?after= names (?parked=1 for the
// parked ones); a cursor that does not parse is a 400.
func (d *Dashboard) readItems(r *http.Request) (itemsView, bool, int, error) {
	q := r.URL.Query()
	parked := q.Get("parked") == "1"
	after, err := todolist.ParseCursor(q.Get("after"))
	if err != nil {
		return itemsView{}, parked, http.StatusBadRequest, fmt.Errorf("?after=: %w", err)
	}
	limit := pageSize
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > todolist.MaxPageSize {
			return itemsView{}, parked, http.StatusBadRequest, fmt.Errorf("?limit=%s: want 1 to %d", s, todolist.MaxPageSize)
		}
	}
	page, err := todolist.ReadItems(r.Context(), d.db, r.PathValue("name"), parked, after, limit, d.clock.Now())
	if err != nil {
		return itemsView{}, parked, http.StatusInternalServerError, err
	}
	v := itemsView{Items: []itemView{}, Next: page.Next.String()}
	for _, it := range page.Items {
		v.Items = append(v.Items, itemView{ID: it.ID, Due: Time{Time: it.Due.In(d.loc)}, NextAttempt: Time{Time: it.NextAttempt.In(d.loc)},
			Attempts: it.Attempts, LastError: it.LastError, Parked: it.Parked, Claimed: it.Claimed})
	}
	return v, parked, 0, nil
}

type listData struct {
	Name   string
	List   listView
	Items  itemsView
	Parked bool
	First  bool
	Chart  template.HTML
	// Lateness charts the list's due items by how long they have been due.
	Lateness template.HTML
}

// latenessBounds are the buckets of a list's lateness chart, and
// latenessLabels their names.
var (
	latenessBounds = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour}
	latenessLabels = []string{"< 1 min", "1–5 min", "5–15 min", "15 min–1 h", "1–6 h", "6–24 h", "> 1 d"}
)

func (d *Dashboard) listPage(w http.ResponseWriter, r *http.Request) {
	lv, code, err := d.readList(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	items, parked, code, err := d.readItems(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	from := lv.From.Time
	chart := barChart("items due in the next 24 hours", lv.DueNext24h, func(i int) string {
		return from.Add(time.Duration(i) * time.Hour).Format("15:04")
	}, 3)
	late, err := todolist.ReadLateness(r.Context(), d.db, lv.Stats.Name, d.clock.Now(), latenessBounds)
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	lateness := barChart("due items by how long they have been due", late, func(i int) string { return latenessLabels[i] }, 1)
	d.render(w, r, "list", lv.Stats.Name, listData{Name: lv.Stats.Name, List: lv, Items: items, Parked: parked,
		First: r.URL.Query().Get("after") == "", Chart: chart, Lateness: lateness})
}

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

// pageLink is the path of page n of a paged page: path with the
// parameters that are not empty and ?page= from the second page on.
func pageLink(path string, n int, params map[string]string) string {
	q := url.Values{}
	for k, val := range params {
		if val != "" {
			q.Set(k, val)
		}
	}
	if n > 1 {
		q.Set("page", strconv.Itoa(n))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
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

// confirmData is the page that asks before an action that cannot be
// undone: its form posts the action, its link goes back.
type confirmData struct {
	Question, Name, Button string
	// Action is the path the form posts to, Back the page to go back to,
	// both below the base path.
	Action, Back string
}

func (d *Dashboard) confirm(w http.ResponseWriter, r *http.Request, title string, data confirmData) {
	v := d.viewOf(r, "confirm", title, data)
	v.Refresh = 0
	d.write(w, http.StatusOK, "confirm", v)
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
