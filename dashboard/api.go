package dashboard

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/passage-of-time/passage/schedule"
)

// The JSON API answers under /api/ with what the pages show; see the
// package documentation for the list. Errors are {"error": "..."} with a
// 400 (bad input), 404 (no such list, schedule or instance) or 500.

func (d *Dashboard) apiSchedules(w http.ResponseWriter, r *http.Request) {
	s, code, err := d.readSchedules(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

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

func (d *Dashboard) apiWorkflows(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflows(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (d *Dashboard) apiWorkflow(w http.ResponseWriter, r *http.Request) {
	v, code, err := d.readWorkflow(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
