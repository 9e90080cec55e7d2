package dashboard

import (
	"net/http"
)

// The JSON API answers under /api/ with what the pages show; see the
// package documentation for the list. Errors are {"error": "..."} with a
// 400 (bad input), 404 (no such list, schedule or instance) or 500.

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
