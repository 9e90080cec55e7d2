package sqldb

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// A HorizonHolder is a PostgreSQL session whose open transaction holds the
// outbox relays' horizon back. The relays read only what committed before
// the oldest transaction still running on the server
// (pg_snapshot_xmin(pg_current_snapshot()), so that a record committing
// late with a lower position is never skipped), and that horizon is the
// whole cluster's: one session idle in a transaction that wrote anything
// (it has an xid) — in any database of the server, by any program — holds
// every relay back until it ends. A transaction that only read has no xid
// and holds nothing back.
type HorizonHolder struct {
	PID int
	// Application is the session's application_name ("psql", "" when none
	// is set), Database and User what it is connected as; State is
	// pg_stat_activity's ("idle in transaction", "active", …). A role
	// without pg_read_all_stats sees the state of its own sessions only.
	Application, Database, User, State string
	// Open is how long its transaction has been open, by the server's
	// clock.
	Open time.Duration
}

// String names the session as an operator would look for it.
func (h HorizonHolder) String() string {
	app := h.Application
	if app == "" {
		app = "no application_name"
	}
	state := h.State
	if state == "" {
		state = "state not visible to this role"
	}
	return fmt.Sprintf("pid %d (%s, %s, user %s, database %s) open for %s", h.PID, app, state, h.User, h.Database, h.Open.Round(time.Second))
}

// HorizonHolders lists the sessions of q's PostgreSQL server, other than
// q's own, whose transaction has been open for at least olderThan and
// holds the relays' horizon (it has an xid), the oldest first, at most
// limit of them. On SQLite, which has no such horizon (one
// writer at a time), it returns none.
func HorizonHolders(ctx context.Context, q sqlx.ExtContext, olderThan time.Duration, limit int) ([]HorizonHolder, error) {
	if DialectOf(q) != Postgres {
		return nil, nil
	}
	rows, err := q.QueryxContext(ctx, `
		SELECT pid, COALESCE(application_name, ''), COALESCE(datname, ''), COALESCE(usename, ''), COALESCE(state, ''),
			CAST(EXTRACT(EPOCH FROM (clock_timestamp() - xact_start)) * 1000000 AS BIGINT)
		FROM pg_stat_activity
		WHERE backend_xid IS NOT NULL
			AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
			AND xact_start <= clock_timestamp() - make_interval(secs => $1)
		ORDER BY xact_start, pid
		LIMIT $2`, olderThan.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("sqldb: read the sessions holding the horizon: %w", err)
	}
	defer rows.Close()
	var out []HorizonHolder
	for rows.Next() {
		var h HorizonHolder
		var micros int64
		if err := rows.Scan(&h.PID, &h.Application, &h.Database, &h.User, &h.State, &micros); err != nil {
			return nil, fmt.Errorf("sqldb: read the sessions holding the horizon: %w", err)
		}
		h.Open = time.Duration(micros) * time.Microsecond
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqldb: read the sessions holding the horizon: %w", err)
	}
	return out, nil
}
