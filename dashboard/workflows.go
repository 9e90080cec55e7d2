package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/passage-of-time/passage/orchestration"
)

// workflowsView is a page of workflow instances, as the page and the
// API show it.
type workflowsView struct {
	Counts map[orchestration.State]int `json:"counts"`
	State  string                      `json:"state"`
	// Query is the request's ?q=: the start of the instances' IDs.
	Query string `json:"q"`
	// Sort is the request's ?sort= (id, state, started or updated), Page
	// its ?page= (1 when it pages by ?after=).
	Sort      string         `json:"sort"`
	Page      int            `json:"page"`
	Instances []instanceView `json:"instances"`
	// Next is the ?after= of the following page by ID, "" on the last
	// and in the other orders, which page by ?page=.
	Next string `json:"next"`
	// NextLink and PrevLink are the links (below the base path) to the
	// pages after and before, "" at either end (and PrevLink when paging
	// by ?after=, which only goes forward).
	NextLink string `json:"next_link"`
	PrevLink string `json:"prev_link"`
}

var states = []orchestration.State{orchestration.Running, orchestration.Completed, orchestration.Failed, orchestration.Cancelled, orchestration.Stuck}

// workflowSorts are the workflows page's ?sort= values ("" is by ID).
var workflowSorts = []orchestration.PageSort{"", orchestration.ByID, orchestration.ByState, orchestration.ByStarted, orchestration.ByUpdated}

// readWorkflows reads the page of instances ?q=, ?state= and ?sort=
// select: by ID a page follows the last ID (?after=), in the other
// orders a page is a number (?page=); one statement a page either way
// (orchestration.ReadPage), beside the counts by state.
func (d *Dashboard) readWorkflows(r *http.Request) (workflowsView, int, error) {
	q := r.URL.Query()
	v := workflowsView{State: q.Get("state"), Query: q.Get("q"), Sort: q.Get("sort"), Page: 1, Instances: []instanceView{}}
	state := orchestration.State(v.State)
	if state != "" && !contains(states, state) {
		return workflowsView{}, http.StatusBadRequest, fmt.Errorf("?state=%s: want running, completed, failed, cancelled or stuck", state)
	}
	sort := orchestration.PageSort(v.Sort)
	if !contains(workflowSorts, sort) {
		return workflowsView{}, http.StatusBadRequest, fmt.Errorf("?sort=%s: want id, state, started or updated", v.Sort)
	}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > math.MaxInt32/pageSize {
			return workflowsView{}, http.StatusBadRequest, fmt.Errorf("?page=%s: want a page number from 1", s)
		}
		v.Page = n
	}
	after := q.Get("after")
	byKey := (sort == "" || sort == orchestration.ByID) && q.Get("page") == ""
	if after != "" && !byKey {
		return workflowsView{}, http.StatusBadRequest, fmt.Errorf("?after=%s pages by ID: not with ?sort=%s or ?page=", after, v.Sort)
	}
	counts, err := orchestration.CountInstances(r.Context(), d.db)
	if err != nil {
		return workflowsView{}, http.StatusInternalServerError, err
	}
	v.Counts = counts
	// One statement a page, whatever the state and the order asked for.
	list, more, err := orchestration.ReadPage(r.Context(), d.db, orchestration.PageQuery{Prefix: v.Query, State: state, Sort: sort,
		After: after, Offset: (v.Page - 1) * pageSize, Limit: pageSize})
	if err != nil {
		return workflowsView{}, http.StatusInternalServerError, err
	}
	for _, s := range list {
		v.Instances = append(v.Instances, d.instance(s))
	}
	params := map[string]string{"state": v.State, "q": v.Query, "sort": v.Sort}
	switch {
	case byKey && more && len(list) > 0:
		v.Next = list[len(list)-1].Instance
		params["after"] = v.Next
		v.NextLink = pageLink("/workflows", 1, params)
	case !byKey:
		if more {
			v.NextLink = pageLink("/workflows", v.Page+1, params)
		}
		if v.Page > 1 {
			v.PrevLink = pageLink("/workflows", v.Page-1, params)
		}
	}
	return v, 0, nil
}

// contains reports whether v is in s.
func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// workflowsData is the workflows page: a page of instances under the
// state tabs.
type workflowsData struct {
	workflowsView
	States []orchestration.State
}

// workflowsPage shows a page of instances (readWorkflows).
func (d *Dashboard) workflowsPage(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflows(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	d.render(w, r, "workflows", "Workflows", workflowsData{workflowsView: v, States: states})
}

// apiWorkflows is the page of instances the workflows page reads, read
// by the same function from the same parameters (readWorkflows).
func (d *Dashboard) apiWorkflows(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflows(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// instanceView is a workflow instance as the pages and the API show it.
type instanceView struct {
	ID           string `json:"id"`
	Workflow     string `json:"workflow"`
	State        string `json:"state"`
	StartedAt    *Time  `json:"started_at"`
	WaitingUntil *Time  `json:"waiting_until"`
	Error        string `json:"error"`
	Events       int64  `json:"events"`
}

// instance is s as the pages show it, its times in the dashboard's zone.
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

// eventView is one event of an instance's history.
type eventView struct {
	Version    int64           `json:"version"`
	Type       string          `json:"type"`
	RecordedAt Time            `json:"recorded_at"`
	Summary    string          `json:"summary"`
	Data       json.RawMessage `json:"data"`
}

// workflowView is an instance and its history, as its page and the API
// show them.
type workflowView struct {
	Instance instanceView `json:"instance"`
	History  []eventView  `json:"history"`
}

// readWorkflow reads the instance the path names and its history; one
// that does not exist is a 404.
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

// workflowData is the instance's page: the instance, and the signal form
// as it was typed when a signal failed.
type workflowData struct {
	workflowView
	Signal signalData
}

// signalData is the signal form: its name and payload as they were
// typed, and the error they met.
type signalData struct {
	Name, Payload, Error string
}

// workflowPage is one instance: its history as a timeline, signal and
// cancel.
func (d *Dashboard) workflowPage(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflow(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	d.render(w, r, "workflow", v.Instance.ID, workflowData{workflowView: v})
}

// confirmCancel asks before cancelling the instance (its Cancel button
// opens it); one that is not running is a 409.
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

// apiWorkflow is an instance and its history, as its page reads them
// (readWorkflow).
func (d *Dashboard) apiWorkflow(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflow(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// engineFor is the engine the actions go through: the one given
// (WithEngine), else one opened on the database at the first action.
func (d *Dashboard) engineFor(ctx context.Context) (*orchestration.Engine, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.engine == nil {
		e, err := orchestration.New(ctx, d.db, orchestration.WithClock(d.clock))
		if err != nil {
			return nil, err
		}
		d.engine = e
	}
	return d.engine, nil
}

// workflowAction is an instance's actions: signal and cancel, refused
// for an instance that is not running.
func (d *Dashboard) workflowAction(r *http.Request) (string, string, int, error) {
	id, verb := r.PathValue("id"), r.PathValue("verb")
	back := itemPath("workflows", id, "")
	history, err := orchestration.ReadHistory(r.Context(), d.db, id)
	switch {
	case errors.Is(err, orchestration.ErrInvalidArgument) || err == nil && len(history) == 0:
		return "", back, http.StatusNotFound, fmt.Errorf("no workflow instance %q", id)
	case err != nil:
		return "", back, http.StatusInternalServerError, err
	}
	if st := orchestration.StatusOf(id, history); st.State != orchestration.Running {
		// The engine refuses it too (orchestration.ErrFinished); asking
		// first names the state without opening the engine.
		return "", back, http.StatusConflict, fmt.Errorf("%s is %s: nothing would %s it", id, st.State, verb)
	}
	e, err := d.engineFor(r.Context())
	if err != nil {
		return "", back, http.StatusInternalServerError, err
	}
	switch verb {
	case "signal":
		typed := func(err error) error { return &formError{err: err, refill: d.signalForm} }
		name := strings.TrimSpace(r.PostFormValue("name"))
		if name == "" {
			return "", back, http.StatusBadRequest, typed(errors.New("signal: the signal's name is empty"))
		}
		var payload any
		if p := strings.TrimSpace(r.PostFormValue("payload")); p != "" {
			if !json.Valid([]byte(p)) {
				return "", back, http.StatusBadRequest, typed(fmt.Errorf("signal %q: payload %q is not JSON", name, p))
			}
			payload = json.RawMessage(p)
		}
		if err := e.Signal(r.Context(), id, name, payload); err != nil {
			return "", back, statusOf(err), typed(err)
		}
		return fmt.Sprintf("signalled %s to %s", name, id), back, 0, nil
	case "cancel":
		if err := e.Cancel(r.Context(), id); err != nil {
			return "", back, statusOf(err), err
		}
		return "cancel requested for " + id, back, 0, nil
	}
	return "", back, http.StatusNotFound, fmt.Errorf("no workflow action %q: want signal or cancel", verb)
}

// statusOf is the HTTP status of a failed signal or cancel: an instance
// that ended after the page's check is a conflict, not a server error.
func statusOf(err error) int {
	if errors.Is(err, orchestration.ErrFinished) {
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// signalForm answers a signal that failed with the instance's page, its
// form holding the name and payload as they were typed and the error
// beside them.
func (d *Dashboard) signalForm(w http.ResponseWriter, r *http.Request, code int, failed error) {
	v, c, err := d.readWorkflow(r)
	if err != nil {
		d.fail(w, r, c, err)
		return
	}
	page := d.viewOf(r, "workflow", v.Instance.ID, workflowData{workflowView: v,
		Signal: signalData{Name: r.PostFormValue("name"), Payload: r.PostFormValue("payload"), Error: failed.Error()}})
	page.Path = itemPath("workflows", v.Instance.ID, "")
	page.Refresh = 0 // reloading would send the form again
	d.write(w, code, "workflow", page)
}
