package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/passage-of-time/passage/orchestration"
)

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
