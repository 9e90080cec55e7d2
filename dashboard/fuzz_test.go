package dashboard_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/passage-of-time/passage/dashboard"
)

// fuzzTargets are where FuzzInputs puts its value: %q is replaced by the
// value escaped for a query, %p escaped for a path segment, %r as it is
// (the raw query, which the server parses itself).
var fuzzTargets = []string{
	"/lists?q=%q", "/schedules?q=%q", "/workflows?q=%q", "/api/lists?q=%q", "/api/schedules?q=%q", "/api/workflows?q=%q",
	"/workflows?after=%q", "/api/workflows?after=%q", "/lists/pending-orders?after=%q", "/api/lists/pending-orders/items?after=%q",
	"/lists/%p", "/api/lists/%p", "/api/lists/%p/items", "/schedules/%p", "/schedules/%p/trigger", "/api/schedules/%p/runs",
	"/workflows/%p", "/workflows/%p/cancel", "/api/workflows/%p",
	"/schedules?sort=%q", "/lists?only=%q", "/lists?sort=%q", "/workflows?state=%q", "/workflows?sort=%q",
	"/lists?page=%q", "/schedules?page=%q", "/workflows?page=%q", "/api/lists/pending-orders/items?limit=%q",
	"/schedules?done=%q&sig=%q", "/schedules?%r", "/lists/pending-orders?%r", "/workflows?%r",
	"POST /logout back=%q", "POST /lists/pending-orders/reactivate id=%q",
	"POST /workflows/order-1/signal name=%q", "POST /workflows/order-1/signal name=paid&payload=%q",
	"POST /schedules/%p/pause",
}

// FuzzInputs sends the dashboard on SQLite every kind of value in every
// parameter and path name it reads (issue 33): whatever they hold, no
// answer is a server error or shows SQL text. Seeded with the issue's
// probes:
//
//	go test -fuzz=FuzzInputs -fuzztime=60s ./dashboard
func FuzzInputs(f *testing.F) {
	for i := range fuzzTargets {
		for _, v := range []string{"", "\x00", "\xff", "\xc3", "%", "_", strings.Repeat("a", 49_999), strings.Repeat("%", 25_000),
			"/\t/evil.example", "//evil.example", "/\\evil", ".", "..", "%2e", cursorOf("\x00"), cursorOf("\xff"), "0.", "1.AA",
			"pending-orders", "order-1", "poll", "weekly-report", `{"a":"\u0000"}`, "\t", "a%00b", "q=%zz&q=%00", "page=99999999999999999999"} {
			f.Add(uint8(i), v)
		}
	}
	fx := newFixture(f, newSQLite(f))
	d, err := dashboard.New(fx.db.DB, dashboard.WithClock(fx.clock), dashboard.WithScheduler(fx.scheduler), dashboard.WithEngine(fx.engine),
		dashboard.WithAdminToken(testToken), dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target uint8, v string) {
		req := fuzzRequest(fuzzTargets[int(target)%len(fuzzTargets)], v)
		if req == nil {
			return // not a request a client can send
		}
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		body, what := w.Body.String(), fmt.Sprintf("%s %.200s", req.Method, req.URL)
		if w.Code >= 500 {
			t.Fatalf("%s: %d %.300s", what, w.Code, body)
		}
		requireNoInternals(t, body, what)
	})
}

// fuzzRequest is target with v put in, or nil when that makes no URL.
func fuzzRequest(target, v string) *http.Request {
	method, form := http.MethodGet, ""
	if rest, ok := strings.CutPrefix(target, "POST "); ok {
		method = http.MethodPost
		target, form, _ = strings.Cut(rest, " ")
	}
	put := func(s string) string {
		return strings.NewReplacer("%q", url.QueryEscape(v), "%p", url.PathEscape(v), "%r", v).Replace(s)
	}
	u, err := url.ParseRequestURI(put(target))
	if err != nil {
		return nil
	}
	req := httptest.NewRequest(method, "http://127.0.0.1/", strings.NewReader(put(form)))
	req.URL, req.RequestURI = u, u.RequestURI()
	req.Header.Set("Accept", "text/html")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if !strings.HasPrefix(target, "/logout") {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
	}
	return req
}
