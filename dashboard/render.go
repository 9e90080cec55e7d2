package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

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

// render writes the page name, titled title, over data, under the
// summary (read at the page's now, or taken from its cache).
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

// viewOf is the view of the page name for r, its now read once.
func (d *Dashboard) viewOf(r *http.Request, name, title string, data any) view {
	now := d.clock.Now().In(d.loc)
	return view{Title: title, Nav: name, Now: exact(now), Clock: clock{Now: now}, Refresh: int(d.refresh.Seconds()),
		Writable: d.token != "", Admin: d.admin(r), Done: d.doneOf(r), Path: r.URL.RequestURI(), Base: d.base, Data: data}
}

// write answers the page name with code, its view v over the layout.
func (d *Dashboard) write(w http.ResponseWriter, code int, name string, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := d.pages[name].ExecuteTemplate(w, "layout", v); err != nil {
		d.logger.Error("dashboard: render", "page", name, "error", err)
	}
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

// fail answers an error: JSON under /api/ and to bearer tokens, text to
// other programs; for browsers (Accept: text/html), the page shell with
// its navigation and the error. A server error (5xx) shows no detail:
// its text may hold SQL or a connection string, so it goes to the log
// under a reference, and the answer says what happened in general and
// gives the reference. It is a 503 with Retry-After when the database
// could not be had in time (see unavailable), a 500 otherwise. No error
// page reloads itself: reloading a failing page every few seconds only
// logged the failure again.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	ref := ""
	if code >= 500 {
		code, ref, err = d.hide(r, code, err)
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter.Seconds())))
		}
	}
	if isAPI(r) {
		body := map[string]string{"error": err.Error()}
		if ref != "" {
			body["reference"] = ref
		}
		writeJSON(w, code, body)
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Error(w, err.Error(), code) // a program: the text alone
		return
	}
	v := d.viewOf(r, "error", http.StatusText(code), errorData{Code: code, Message: err.Error(), Retry: code >= 500,
		Reference: ref})
	v.Refresh = 0
	d.write(w, code, "error", v)
}

// errorData is the error page's.
type errorData struct {
	Code    int
	Message string
	// Retry says trying again may help (a server error); Reference is
	// the one its log line has.
	Retry     bool
	Reference string
}

// The JSON API answers under /api/ with what the pages show, read by the
// same functions from the same parameters; see the package documentation
// for the list. Errors are {"error": "..."} with a 400 (bad input), 404 (no
// such list, schedule or instance), or a 500 or 503 with the "reference"
// of the log line that has the details (failure.go).

// isAPI reports whether r is answered in JSON: a path under /api/, or a
// bearer token (a program).
func isAPI(r *http.Request) bool {
	return len(r.URL.Path) >= 5 && r.URL.Path[:5] == "/api/" || r.Header.Get("Authorization") != ""
}

// writeJSON answers v as indented JSON with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// doneQuery is the query that shows done on the page an action returns
// to, with a MAC under a key of this process: the page shows the messages
// the server wrote, not a text a link made up.
func (d *Dashboard) doneQuery(done string) url.Values {
	return url.Values{"done": {done}, "sig": {d.doneMAC(done)}}
}

// doneMAC is done's MAC under the key of this process.
func (d *Dashboard) doneMAC(done string) string {
	m := hmac.New(sha256.New, d.doneKey)
	m.Write([]byte(done))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// doneOf is the done message of r, if the server wrote it.
func (d *Dashboard) doneOf(r *http.Request) string {
	q := r.URL.Query()
	done := q.Get("done")
	if done == "" || !hmac.Equal([]byte(q.Get("sig")), []byte(d.doneMAC(done))) {
		return ""
	}
	return done
}

// pageSize is the items or instances a page shows.
const pageSize = 50

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
