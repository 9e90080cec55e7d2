package sqldbtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
)

// Holder is a PostgreSQL session left idle in a transaction that holds an
// xid, as a forgotten psql does: it holds the outbox relays' horizon back
// until End.
type Holder struct {
	PID         int
	Application string
	tx          interface{ Rollback() error }
}

// End rolls the holder's transaction back.
func (h *Holder) End() error { return h.tx.Rollback() }

// HoldHorizon opens a session on the server of PASSAGE_TEST_POSTGRES,
// under an application_name of its own, begins a transaction, gives it
// an xid and leaves it idle; it is ended when the test ends, if not
// before. It skips the test when the variable is unset.
func HoldHorizon(t testing.TB) *Holder {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(PostgresEnv + " is not set")
	}
	app := "passage_horizon_" + randomHex(6)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db := mustOpen(t, u.String())
	ctx := context.Background()
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatalf("begin the holding transaction: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	h := &Holder{Application: app, tx: tx}
	var xid string
	if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid(), pg_current_xact_id()::text`).Scan(&h.PID, &xid); err != nil {
		t.Fatalf("give the holding transaction an xid: %v", err)
	}
	return h
}

// Named is how sqldb.HorizonHolder's String names h while it is idle.
func (h *Holder) Named() string {
	return fmt.Sprintf("pid %d (%s, idle in transaction", h.PID, h.Application)
}
