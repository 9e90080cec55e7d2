package cli

import (
	"fmt"
	"net/http"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// observability serves /healthz and /metrics: health answers the first
// ("ok", or 503 with what is wrong), tel the second. Mounted at both
// paths, it refuses other methods.
func observability(health http.HandlerFunc, tel *telemetry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", health)
	mux.Handle("GET /metrics", tel.handler())
	return mux
}

// runHealth is /healthz of "ticker run". It only reads: it asks the
// ticker whether its last pass worked, pings the database, looks for a
// PostgreSQL transaction holding the relays back past --horizon-limit
// (before the backlog: it is the cause, delivery behind the symptom) and
// reads each sink's backlog.
func runHealth(ticker *tick.Ticker, db *sqldb.DB, out *delivery) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := ticker.Health(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := db.PingContext(r.Context()); err != nil {
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := out.horizon.health(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := out.health(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}
}

// serveHealth is /healthz of "ticker serve": the database answers, and
// no PostgreSQL transaction has held the relays back past
// --horizon-limit (h; nil on SQLite) — a matter of the database, which
// every process on it sees alike. What else run's reports — its ticker's
// last pass, its relays' lag — belongs to the process that runs them.
func serveHealth(db *sqldb.DB, h *horizon) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := db.PingContext(r.Context()); err != nil {
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := h.health(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}
}
