package dashboard

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

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

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

type workflowsData struct {
	workflowsView
	States []orchestration.State
}

func (d *Dashboard) workflowsPage(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflows(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	d.render(w, r, "workflows", "Workflows", workflowsData{workflowsView: v, States: states})
}
