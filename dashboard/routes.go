package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// routes maps the pages, the API and the actions. Every action is a POST
// behind CrossOriginProtection (a browser's cross-site POST is refused
// whatever it carries) and the admin check.
func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets())))
	d.handle(mux, "GET /{$}", http.HandlerFunc(d.tickersPage))
	d.handle(mux, "GET /lists", http.HandlerFunc(d.listsPage))
	d.handle(mux, "GET /lists/{name}", http.HandlerFunc(d.listPage))
	d.handle(mux, "GET /schedules", http.HandlerFunc(d.schedulesPage))
	d.handle(mux, "GET /schedules/{name}", http.HandlerFunc(d.schedulePage))
	d.handle(mux, "GET /workflows", http.HandlerFunc(d.workflowsPage))
	d.handle(mux, "GET /workflows/{id}", http.HandlerFunc(d.workflowPage))
	// Triggering a schedule and cancelling an instance cannot be undone:
	// their buttons open a page that asks, whose button posts.
	d.handle(mux, "GET /schedules/{name}/trigger", http.HandlerFunc(d.confirmTrigger))
	d.handle(mux, "GET /workflows/{id}/cancel", http.HandlerFunc(d.confirmCancel))

	d.handle(mux, "GET /api/status", http.HandlerFunc(d.apiStatus))
	d.handle(mux, "GET /api/lag", http.HandlerFunc(d.apiLag))
	d.handle(mux, "GET /api/lists", http.HandlerFunc(d.apiLists))
	d.handle(mux, "GET /api/lists/{name}", http.HandlerFunc(d.apiList))
	d.handle(mux, "GET /api/lists/{name}/items", http.HandlerFunc(d.apiItems))
	d.handle(mux, "GET /api/schedules", http.HandlerFunc(d.apiSchedules))
	d.handle(mux, "GET /api/schedules/{name}/runs", http.HandlerFunc(d.apiRuns))
	d.handle(mux, "GET /api/workflows", http.HandlerFunc(d.apiWorkflows))
	d.handle(mux, "GET /api/workflows/{id}", http.HandlerFunc(d.apiWorkflow))

	actions := http.NewServeMux()
	d.handle(actions, "POST /login", http.HandlerFunc(d.login))
	d.handle(actions, "POST /logout", http.HandlerFunc(d.logout))
	d.handle(actions, "POST /lists/{name}/reactivate", d.action(d.reactivate))
	d.handle(actions, "POST /schedules/{name}/{verb}", d.action(d.scheduleAction))
	d.handle(actions, "POST /workflows/{id}/{verb}", d.action(d.workflowAction))
	// Refuses unsafe requests a browser marks cross-site (Sec-Fetch-Site)
	// or whose Origin is another host; requests without either header
	// (curl, other programs) pass, as they carry no ambient cookie a
	// forger could ride on.
	protected := http.NewCrossOriginProtection().Handler(actions)
	mux.Handle("POST /", protected)
	// Anything else is not found: without this, "POST /" answered every
	// other GET with 405 and Allow: POST.
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, fmt.Errorf("no page %s", r.URL.Path))
	}))
	return securityHeaders(mux)
}

// handle registers h for pattern behind the check of its inputs
// (routeInputs, which must declare them), with the request's deadline
// for its database work (WithRequestTimeout), and the twin of a pattern
// with a name in its path (twinOf; names.go says why). A POST's body is
// read first, within its limits (readBody).
func (d *Dashboard) handle(mux *http.ServeMux, pattern string, h http.Handler) {
	in, ok := routeInputs[pattern]
	if !ok {
		panic("dashboard: the inputs of " + pattern + " are not declared in routeInputs")
	}
	post := strings.HasPrefix(pattern, "POST ")
	checked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if post && !d.readBody(w, r) {
			return
		}
		if err := in.check(r); err != nil {
			d.fail(w, r, http.StatusBadRequest, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), d.requestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
	mux.Handle(pattern, checked)
	if twin, key := twinOf(pattern); twin != "" {
		mux.Handle(twin, fromQuery(key, checked))
	}
}

// twinOf is pattern's twin and the query parameter it reads the name
// from ("" when the pattern has no name in its path).
func twinOf(pattern string) (string, string) {
	method, path, _ := strings.Cut(pattern, " ")
	for _, tw := range twins {
		for _, prefix := range []string{"", "/api"} {
			if rest, ok := strings.CutPrefix(path, prefix+tw.inPath); ok {
				return method + " " + prefix + tw.inQuery + rest, tw.key
			}
		}
	}
	return "", ""
}

// fromQuery serves h with the path value key taken from the query
// parameter key, as if the name were in the path.
func fromQuery(key string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.SetPathValue(key, r.URL.Query().Get(key))
		h.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the pages out of other sites' frames and limits
// what they may load to their own assets.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; form-action 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}
