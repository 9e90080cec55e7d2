package dashboard

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"

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
