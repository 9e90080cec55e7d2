package dashboard_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// Issue 33 point 2: on PostgreSQL, 200 page views at once got 65 answers
// of 500 "too many clients already" (and refused every other client of
// the server meanwhile): nothing bounded the pool. With the dashboard's
// pool bounded at n, the same burst gets no 500 (a 503 only if a view
// waited past its 10 s deadline: none when the machine is not loaded with
// other tests, the figures are logged), and pg_stat_activity, sampled
// all through the burst, never shows more than n connections of the
// dashboard's application name.
func TestTwoHundredSimultaneousPageViewsStayWithinThePool(t *testing.T) {
	t.Parallel()
	db, dsn := sqldbtest.Postgres(t)
	f := newFixture(t, db)
	ctx := context.Background()

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	app := "passage_dashboard_burst_" + hex.EncodeToString(b)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	pool, err := sqldb.Open(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = pool.Close() })
	const n = 5
	pool.SetMaxOpenConns(n)
	log := &syncBuffer{}
	d, err := dashboard.New(pool.DB, dashboard.WithClock(f.clock), dashboard.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)

	// The sampler reads pg_stat_activity through the fixture's own pool
	// (another application name) from before the burst until after it.
	var (
		peak, samples, during int
		burst                 = make(chan struct{})
		over                  = make(chan struct{})
		sampled               = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		for {
			var c int
			if err := db.GetContext(ctx, &c, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
				t.Errorf("sample pg_stat_activity: %v", err)
				return
			}
			peak, samples = max(peak, c), samples+1
			select {
			case <-over:
				return
			case <-burst:
				during++
			default:
			}
		}
	}()

	paths := []string{"/", "/lists", "/schedules", "/workflows", "/lists/pending-orders", "/schedules/poll",
		"/workflows/order-1", "/api/status", "/api/lists", "/api/schedules"}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 200}}
	t.Cleanup(client.CloseIdleConnections)
	codes := make([]int, 200)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range codes {
		wg.Go(func() {
			<-ready
			res, err := client.Get(srv.URL + paths[i%len(paths)])
			if err != nil {
				t.Errorf("view %d: %v", i, err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			codes[i] = res.StatusCode
		})
	}
	close(burst)
	close(ready) // all 200 at once
	wg.Wait()
	close(over)
	<-sampled

	counted := map[int]int{}
	for _, c := range codes {
		counted[c]++
	}
	t.Logf("200 views, pool of %d: statuses %v; pg_stat_activity peak %d in %d samples (%d during the burst)", n, counted, peak, samples, during)
	require.Zero(t, counted[http.StatusInternalServerError], "500s: %v", counted)
	require.Equal(t, 200, counted[http.StatusOK]+counted[http.StatusServiceUnavailable], "only 200s and 503s: %v", counted)
	// A 503 only for a view whose deadline passed while it waited.
	require.Equal(t, counted[http.StatusServiceUnavailable], strings.Count(log.String(), "context deadline exceeded"),
		"a 503 for another reason than the deadline: %s", log.String())
	require.Positive(t, during, "no sample taken during the burst")
	require.Positive(t, peak, "the sampler never saw the dashboard's connections")
	require.LessOrEqual(t, peak, n, "more connections than the pool's bound")
}
