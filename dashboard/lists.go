package dashboard

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/passage-of-time/passage/todolist"
)

// listRow is a list on the lists page: its counts, its items failing,
// and how bad it stands.
type listRow struct {
	ListStatus
	Failing int `json:"failing"`
	// Level is the worst of: parked items (red), its oldest due item's
	// wait (trouble.go), items failing (amber).
	Level string `json:"trouble"`
}

// listsData is a page of lists, as the page and /api/lists show it.
type listsData struct {
	Rows []listRow `json:"lists"`
	// Query, Only and Sort are the request's ?q=, ?only= and ?sort=.
	Query string `json:"q"`
	Only  string `json:"only"`
	Sort  string `json:"sort"`
	// Total counts the lists ?q= and ?only= keep; Page is this page's
	// number from 1, Pages how many there are; Prev and Next link the
	// pages before and after ("" at either end), below the base path.
	Total int    `json:"total"`
	Page  int    `json:"page"`
	Pages int    `json:"pages"`
	Prev  string `json:"prev"`
	Next  string `json:"next"`
}

// listsPageSize is how many lists a page shows.
const listsPageSize = 50

// readLists reads the page ?page= of the lists ?q= (a part of the name)
// and ?only= (parked, failing, behind) keep, in the order ?sort= (name,
// pending, parked, failing, oldest): one statement
// (todolist.ReadListPage), however many lists there are. The lists page
// and /api/lists both read it.
func (d *Dashboard) readLists(r *http.Request) (listsData, int, error) {
	q := r.URL.Query()
	data := listsData{Rows: []listRow{}, Query: q.Get("q"), Only: q.Get("only"), Sort: q.Get("sort"), Page: 1}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > math.MaxInt32/listsPageSize {
			return data, http.StatusBadRequest, fmt.Errorf("?page=%s: want a page number from 1", s)
		}
		data.Page = n
	}
	only := todolist.ListFilter(data.Only)
	if !slices.Contains([]todolist.ListFilter{todolist.AllLists, todolist.WithParked, todolist.WithFailing, todolist.Behind}, only) {
		return data, http.StatusBadRequest, fmt.Errorf("?only=%s: want parked, failing or behind", data.Only)
	}
	sort := todolist.ListSort(data.Sort)
	if !slices.Contains([]todolist.ListSort{"", todolist.ListsByName, todolist.ByPending, todolist.ByParked, todolist.ByFailing, todolist.ByOldestDue}, sort) {
		return data, http.StatusBadRequest, fmt.Errorf("?sort=%s: want name, pending, parked, failing or oldest", data.Sort)
	}
	now := d.clock.Now().In(d.loc)
	page, err := todolist.ReadListPage(r.Context(), d.db, todolist.ListPageQuery{Match: data.Query, Filter: only, Sort: sort,
		Offset: (data.Page - 1) * listsPageSize, Limit: listsPageSize, Now: now, Grace: listGrace})
	if err != nil {
		return data, http.StatusInternalServerError, err
	}
	for _, l := range page.Rows {
		row := listRow{ListStatus: listStatus(l.ListStats, now, d.loc), Failing: l.Failing}
		if row.Failing > 0 {
			row.Level = amber
		}
		if row.OldestDue != nil {
			row.Level = worse(row.Level, lateness(now.Sub(row.OldestDue.Time), listGrace, listRed))
		}
		if row.Parked > 0 {
			row.Level = red
		}
		data.Rows = append(data.Rows, row)
	}
	data.Total = page.Total
	data.Pages = max(1, (data.Total+listsPageSize-1)/listsPageSize)
	link := func(n int) string {
		return pageLink("/lists", n, map[string]string{"q": data.Query, "only": data.Only, "sort": data.Sort})
	}
	if data.Page > 1 {
		data.Prev = link(data.Page - 1)
	}
	if data.Page < data.Pages {
		data.Next = link(data.Page + 1)
	}
	return data, 0, nil
}

// listsPage shows a page of lists (readLists); the summary above comes
// from its cache.
func (d *Dashboard) listsPage(w http.ResponseWriter, r *http.Request) {
	data, code, err := d.readLists(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	d.render(w, r, "lists", "To-do lists", data)
}

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

// itemsView is a page of a list's items, as the list's page and
// /api/lists/{name}/items show it.
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

// listData is one list's page.
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

// listPage is one list: its counts, a chart of the items due in the next
// 24 hours, a page of its items (or of the parked ones) and a chart of its
// due items by how long they have been due.
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

// apiLists is the lists page's page of lists, read by the same function
// from the same parameters (?q=, ?only=, ?sort=, ?page=).
func (d *Dashboard) apiLists(w http.ResponseWriter, r *http.Request) {
	data, code, err := d.readLists(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, data)
}

// apiList is a list's counts and chart, as its page reads them
// (readList).
func (d *Dashboard) apiList(w http.ResponseWriter, r *http.Request) {
	lv, code, err := d.readList(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, lv)
}

// apiItems is the page of a list's items its page reads (readItems); a
// list that does not exist is a 404.
func (d *Dashboard) apiItems(w http.ResponseWriter, r *http.Request) {
	if _, code, err := d.readList(r); err != nil {
		d.fail(w, r, code, err)
		return
	}
	items, _, code, err := d.readItems(r)
	if err != nil {
		d.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, items)
}

// reactivate is the list page's action: the parked item ?id= goes back to
// pending.
func (d *Dashboard) reactivate(r *http.Request) (string, string, int, error) {
	name, id := r.PathValue("name"), r.PostFormValue("id")
	back := itemPath("lists", name, "")
	l, err := todolist.Open(r.Context(), d.db, name)
	switch {
	case errors.Is(err, todolist.ErrInvalidName):
		return "", back, http.StatusNotFound, err
	case err != nil:
		return "", back, http.StatusInternalServerError, err
	}
	if err := l.Reactivate(r.Context(), id); err != nil {
		if errors.Is(err, todolist.ErrNotFound) || errors.Is(err, todolist.ErrInvalidID) {
			return "", back, http.StatusNotFound, err
		}
		return "", back, http.StatusInternalServerError, err
	}
	return fmt.Sprintf("re-activated %s in %s", id, name), back, 0, nil
}
