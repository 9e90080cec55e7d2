package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestMain runs the services when the launcher starts this test binary as
// one of them, and the tests otherwise.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "time" || os.Args[1] == "orders") {
		os.Exit(mainCode(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// The demo of the README: two processes, a time service publishing
// simulated minutes to JetStream and an order service reading them; bob's
// unpaid order is cancelled once its deadline passed on the time
// service's clock, alice's paid one is not. The oracle is the order
// service's event store, read after both processes are gone.
func TestTwoServicesCancelTheUnpaidOrderOnly(t *testing.T) {
	url := os.Getenv("PASSAGE_TEST_NATS")
	if url == "" {
		t.Skip("PASSAGE_TEST_NATS is not set")
	}
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := backend.Open(t)
			twoServices(t, url, db, dsn)
		})
	}
}

// twoServices runs the demo with the order service on the empty database
// dsn, then reads what it did from db.
func twoServices(t *testing.T, url string, db *sqldb.DB, dsn string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"-nats", url, "-minute", "200ms", "-timeout", "3m", "-report", "1m", "-orders-db", dsn}, &out)
	require.NoError(t, err, "output:\n%s", out.String())
	require.NoError(t, ctx.Err(), "the demo ended by itself; output:\n%s", out.String())
	t.Logf("output:\n%s", out.String())

	var streams []string
	require.NoError(t, db.SelectContext(context.Background(), &streams, `SELECT DISTINCT stream FROM eventstore_events ORDER BY stream`))
	require.Len(t, streams, 2, "two orders placed")
	sys, err := ordering.Open(context.Background(), db.DB, ordering.Config{})
	require.NoError(t, err)
	defer sys.Close(context.Background())
	byClient := map[string]ordering.Order{}
	for _, s := range streams {
		id, ok := strings.CutPrefix(s, ordering.StreamOf(""))
		require.True(t, ok, "stream %s", s)
		o, err := sys.Order(context.Background(), id)
		require.NoError(t, err)
		byClient[o.ClientID] = o
	}
	alice, bob := byClient["alice"], byClient["bob"]
	require.Equal(t, ordering.StatusCompleted, alice.Status, "alice paid: her order is completed, not cancelled")
	require.Equal(t, ordering.StatusCancelled, bob.Status, "bob did not pay")
	require.Equal(t, ordering.ReasonTimedOut, bob.CancelReason)
	require.False(t, bob.ClosedAt.Before(bob.TimeoutAfter), "bob's order cancelled at %v, before its deadline %v", bob.ClosedAt, bob.TimeoutAfter)
	require.Less(t, bob.ClosedAt.Sub(bob.TimeoutAfter), time.Minute, "cancelled at the first minute after the deadline")
	stats, err := sys.Pending().Stats(context.Background(), bob.ClosedAt)
	require.NoError(t, err)
	require.Zero(t, stats.Pending, "nothing left pending")

	// The schedule's runs: each reported once, through the inbox, in the
	// transaction of its report; at least the first (at the first minute)
	// came before the demo ended.
	var reports []struct {
		SlotID string `db:"slot_id"`
		N      int    `db:"n"`
	}
	require.NoError(t, db.SelectContext(context.Background(), &reports, `SELECT slot_id, COUNT(*) AS n FROM order_reports GROUP BY slot_id ORDER BY slot_id`))
	require.NotEmpty(t, reports, "an orders-report run was reported; output:\n%s", out.String())
	for _, r := range reports {
		require.Equal(t, 1, r.N, "run %s reported once", r.SlotID)
		require.True(t, strings.HasPrefix(r.SlotID, "orders-report@"), r.SlotID)
		require.Contains(t, out.String(), "pending, reported once (slot id "+r.SlotID+")")
	}

	require.Contains(t, out.String(), fmt.Sprintf("[orders] done: 1 paid and completed, 1 cancelled by timeout, 0 pending, %d report(s)", len(reports)))
	require.Contains(t, out.String(), "bob's order cancelled: timed out")
	require.NotContains(t, out.String(), "alice's order cancelled")
	require.Contains(t, out.String(), "[time]   ", "the time service's output")
}

func TestTheLauncherRefusesBadArguments(t *testing.T) {
	var out bytes.Buffer
	require.ErrorContains(t, run(context.Background(), []string{"-minute", "soon"}, &out), `invalid value "soon" for flag -minute`)
	require.ErrorContains(t, run(context.Background(), []string{"extra"}, &out), `unexpected "extra"`)
	require.ErrorContains(t, run(context.Background(), []string{"-report", "5m"}, &out), "-report 5m0s: must be positive and at most -timeout 3m0s")
	require.ErrorContains(t, run(context.Background(), []string{"time", "-minute", "2m"}, &out), "-minute 2m0s: must be more than 0 and at most 1m")
	require.ErrorContains(t, run(context.Background(), []string{"orders", "-timeout", "0s"}, &out), "-timeout 0s: must be positive")
}
