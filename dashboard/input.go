package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/passage-of-time/passage/todolist"
)

// Every input the dashboard reads — query parameters, the names in paths,
// the form fields of the actions — is checked here, once, before a
// handler or the database sees it: one that cannot be valid is a 400
// naming it. PostgreSQL refuses a NUL byte or invalid UTF-8 in a TEXT
// parameter with an error (the page was a 500 showing it), SQLite refuses
// a LIKE pattern over 50,000 bytes; neither can hold a name that is
// valid, so both databases are spared the question and answer alike.
//
// The caps are in bytes (the package documentation lists them).
const (
	// maxFilter caps ?q=, a part of a name typed in a search box.
	maxFilter = 256
	// maxWord caps the parameters read from a fixed set of words
	// (?sort=, ?only=, ?state=, ?parked=, the action in a path) and
	// maxNumber the numbers (?page=, ?limit=).
	maxWord   = 32
	maxNumber = 20
	// maxScheduleName and maxInstanceID are what schedule.Definition and
	// orchestration.Start accept (neither exports its limit).
	maxScheduleName = 200
	maxInstanceID   = 200
	// maxCursor caps a list's ?after=: an instant and an item ID of up
	// to todolist.MaxIDLength bytes in base64url.
	maxCursor = 24 + (todolist.MaxIDLength*4+2)/3
	// maxBack caps back=, the path log in and log out return to.
	maxBack = 2048
	// maxToken caps the token a login form posts; maxSignalName a
	// signal's name; a signal's payload is capped by the body's limit.
	maxToken      = 1024
	maxSignalName = 200
	// maxDone caps the message an action leaves on the page it returns
	// to (?done=, written by the server, names and a note in it) and
	// maxSig its MAC.
	maxDone = 4096
	maxSig  = 64
)

// input is what one parameter may hold.
type input struct {
	// what names it in a refusal: "?q=", "the list name in the path".
	what string
	// max is its cap in bytes.
	max int
	// controls allows control characters other than NUL (names that the
	// library lets hold a tab, say); NUL and invalid UTF-8 never pass,
	// since PostgreSQL can store neither in TEXT.
	controls bool
	// bytes is for a secret compared as bytes (the token): its cap only.
	bytes bool
	// rule says in a refusal what the input should be.
	rule string
	// check is what else it must be, once it is text.
	check func(string) error
}

// The inputs, by kind.
var (
	filterInput = input{max: maxFilter, rule: "a part of a name, without control characters"}
	wordInput   = input{max: maxWord, rule: "a word"}
	numberInput = input{max: maxNumber, rule: "a number"}
	listName    = input{what: "the list name in the path", max: todolist.MaxNameLength,
		rule: "a to-do list's name: UTF-8 without control characters"}
	scheduleName = input{what: "the schedule name in the path", max: maxScheduleName, controls: true,
		rule: "a schedule's name: UTF-8 without NUL"}
	instanceID = input{what: "the workflow instance id in the path", max: maxInstanceID, controls: true,
		rule: "a workflow instance id: UTF-8 without NUL"}
	itemID     = input{max: todolist.MaxIDLength, controls: true, rule: "an item's id: UTF-8 without NUL"}
	listCursor = input{max: maxCursor, rule: "the next page's cursor, as the previous page gave it", check: checkCursor}
)

// param is in with what set to the query parameter key.
func param(key string, in input) input {
	in.what = "?" + key + "="
	return in
}

// field is in with what set to the form field key.
func field(key string, in input) input {
	in.what = "form field " + key
	return in
}

// inputs are what a route reads: its path's wildcards, its query's
// parameters and its form's fields, by name.
type inputs struct {
	path, query, form map[string]input
}

// everyPage is what every route reads from the query besides its own: the
// message an action left (see doneOf).
var everyPage = map[string]input{
	"done": param("done", input{max: maxDone, controls: true, rule: "a message the server wrote"}),
	"sig":  param("sig", input{max: maxSig, rule: "the message's signature"}),
}

// Query and form inputs that several routes share.
var (
	// pageQuery is what /lists and /schedules read.
	pageQuery = map[string]input{"q": param("q", filterInput), "only": param("only", wordInput),
		"sort": param("sort", wordInput), "page": param("page", numberInput)}
	itemsQuery = map[string]input{"after": param("after", listCursor), "parked": param("parked", wordInput),
		"limit": param("limit", numberInput)}
	workflowsQuery = map[string]input{"q": param("q", filterInput), "state": param("state", wordInput),
		"sort": param("sort", wordInput), "page": param("page", numberInput), "after": param("after", instanceID)}
	backForm = map[string]input{"back": field("back", input{max: maxBack, controls: true, rule: "a path of this dashboard"})}
	onList   = map[string]input{"name": listName}
	onOne    = map[string]input{"name": scheduleName}
	onID     = map[string]input{"id": instanceID}
	verb     = input{what: "the action in the path", max: maxWord, rule: "an action"}
)

// routeInputs declares, for every route, the inputs it reads; routes
// registers no handler without them.
var routeInputs = map[string]inputs{
	"GET /{$}":                       {},
	"GET /lists":                     {query: pageQuery},
	"GET /lists/{name}":              {path: onList, query: itemsQuery},
	"GET /schedules":                 {query: pageQuery},
	"GET /schedules/{name}":          {path: onOne},
	"GET /workflows":                 {query: workflowsQuery},
	"GET /workflows/{id}":            {path: onID},
	"GET /schedules/{name}/trigger":  {path: onOne},
	"GET /workflows/{id}/cancel":     {path: onID},
	"GET /api/status":                {},
	"GET /api/lag":                   {},
	"GET /api/lists":                 {query: pageQuery},
	"GET /api/lists/{name}":          {path: onList},
	"GET /api/lists/{name}/items":    {path: onList, query: itemsQuery},
	"GET /api/schedules":             {query: pageQuery},
	"GET /api/schedules/{name}/runs": {path: onOne, query: map[string]input{"limit": param("limit", numberInput)}},
	"GET /api/workflows":             {query: workflowsQuery},
	"GET /api/workflows/{id}":        {path: onID},
	"POST /login": {form: map[string]input{"back": backForm["back"],
		"token": field("token", input{max: maxToken, bytes: true, rule: "the admin token"})}},
	"POST /logout":                  {form: backForm},
	"POST /lists/{name}/reactivate": {path: onList, form: map[string]input{"id": field("id", itemID)}},
	"POST /schedules/{name}/{verb}": {path: map[string]input{"name": scheduleName, "verb": verb}},
	"POST /workflows/{id}/{verb}": {path: map[string]input{"id": instanceID, "verb": verb},
		form: map[string]input{"name": field("name", input{max: maxSignalName, rule: "a signal's name, without control characters"}),
			"payload": field("payload", input{max: maxBody, controls: true, rule: "JSON", check: checkPayload})}},
}

// check checks every input r carries that the route reads.
func (in inputs) check(r *http.Request) error {
	for name, p := range in.path {
		if err := p.valid(r.PathValue(name)); err != nil {
			return err
		}
	}
	for _, set := range []struct {
		declared map[string]input
		values   url.Values
	}{{everyPage, r.URL.Query()}, {in.query, r.URL.Query()}, {in.form, r.PostForm}} {
		for key, p := range set.declared {
			for _, v := range set.values[key] {
				if err := p.valid(v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// valid checks one value of the input.
func (in input) valid(v string) error {
	if len(v) > in.max {
		return in.refuse("%d bytes, over its cap of %d", len(v), in.max)
	}
	if in.bytes {
		return nil
	}
	if !utf8.ValidString(v) {
		return in.refuse("not valid UTF-8")
	}
	if i := strings.IndexByte(v, 0); i >= 0 {
		return in.refuse("a NUL byte at byte %d", i)
	}
	if !in.controls {
		if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(v[i:])
			return in.refuse("the control character %U at byte %d", r, i)
		}
	}
	if in.check != nil {
		if err := in.check(v); err != nil {
			return fmt.Errorf("%s: %w", in.what, err)
		}
	}
	return nil
}

// refuse says what is wrong with the input and what it should be,
// without repeating what was sent (it may be 1 MiB).
func (in input) refuse(format string, args ...any) error {
	return fmt.Errorf("%s: %s: want %s, at most %d bytes", in.what, fmt.Sprintf(format, args...), in.rule, in.max)
}

// checkCursor checks a list's ?after=: a cursor that parses, whose item
// ID is one an item can have.
func checkCursor(s string) error {
	c, err := todolist.ParseCursor(s)
	if err != nil {
		return err
	}
	return itemID.valid(c.ID)
}

// errNUL refuses a signal payload holding U+0000, which PostgreSQL's
// JSONB cannot store.
var errNUL = errors.New(`holds \u0000, which the database cannot store`)

// checkPayload refuses a payload holding \u0000 in a string or a key
// (the action refuses one that is not JSON).
func checkPayload(s string) error {
	if !strings.Contains(s, `\u0000`) {
		return nil
	}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return nil // not JSON: the action says so
	}
	if holdsNUL(v) {
		return errNUL
	}
	return nil
}

func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0) >= 0
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// localPath keeps a redirect on this dashboard, below its base path: a
// path starting with a single "/", no "\" (browsers read it as "/"), no
// control character (browsers drop a tab or a newline, so "/\t/evil"
// became "//evil", another site), no scheme, host or user, and no "." or
// ".." segment, encoded or not (it would climb out of the base path).
// Anything else goes to the start page.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsRune(p, '\\') ||
		strings.ContainsFunc(p, unicode.IsControl) {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return "/"
		}
	}
	return p
}

// maxBody bounds the size of a request's form, and defaultBodyTimeout
// (dashboard.go) how long reading it may take: a client that sends a large
// body, or one slowly, cannot hold a connection and its goroutine.
const maxBody = 1 << 20

// readBody sets r's read deadline and size limit and reads its form
// (whatever server runs the dashboard; one that cannot set deadlines
// keeps its own). A body over the limit is answered 413, one not sent
// in time 408, one that does not parse 400; readBody then says false.
func (d *Dashboard) readBody(w http.ResponseWriter, r *http.Request) bool {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d.bodyTimeout))
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	err := r.ParseForm()
	if err == nil {
		return true
	}
	var tooLarge *http.MaxBytesError
	var timeout interface{ Timeout() bool }
	switch {
	case errors.As(err, &tooLarge):
		d.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Errorf("the request's body is over the limit of %d bytes (1 MiB)", maxBody))
	case errors.As(err, &timeout) && timeout.Timeout():
		d.fail(w, r, http.StatusRequestTimeout, fmt.Errorf("the request's body was not sent within %s", d.bodyTimeout))
	default:
		d.fail(w, r, http.StatusBadRequest, fmt.Errorf("the request's body does not read as a form: %w", err))
	}
	return false
}
