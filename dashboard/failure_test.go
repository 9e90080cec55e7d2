package dashboard_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// referenceIn finds the reference an answer gives for its log line.
var referenceIn = regexp.MustCompile(`reference ([0-9a-f]{8})`)

// patient is a client that waits 20 s at most: a request that never
// gives up fails the test rather than hang it.
var patient = &http.Client{Timeout: 20 * time.Second}

// answer is a request's status, Retry-After and body, sent as a browser
// (Accept: text/html), as the API or as another program.
func answer(t *testing.T, u, accept string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := patient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Retry-After"), string(b)
}

// Issue 33 point 2: a server error showed the database's error, SQL and
// all (and on PostgreSQL the user, database and host of a connection
// error). Now the page, the API and the plain answer say that it failed
// and give a reference; the log has the error under that reference. Both
// backends, a column renamed standing for a database that fails.
func TestAServerErrorShowsAReferenceNotTheDatabasesWords(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			f := newFixture(t, db)
			log := &syncBuffer{}
			srv := f.serve(t, dashboard.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
			_, err := f.db.ExecContext(context.Background(), `ALTER TABLE schedule_schedules RENAME COLUMN spec TO spec_away`)
			require.NoError(t, err)
			for _, c := range []struct{ path, accept string }{
				{"/schedules", "text/html"}, {"/schedules/poll", "text/html"}, {"/api/schedules", ""}, {"/schedules", ""},
			} {
				code, retry, body := answer(t, srv.URL+c.path, c.accept)
				require.Equal(t, http.StatusInternalServerError, code, "%s: %s", c.path, body)
				require.Empty(t, retry, c.path)
				requireNoInternals(t, body, c.path)
				require.NotContains(t, body, "s.spec", c.path)
				ref := referenceIn.FindStringSubmatch(body)
				require.NotNil(t, ref, "%s: %s", c.path, body)
				require.Regexp(t, `reference=`+ref[1]+`.*s\.spec`, log.String(), "the log has the error under the reference")
				if strings.HasPrefix(c.path, "/api/") {
					var e map[string]string
					require.NoError(t, json.Unmarshal([]byte(body), &e))
					require.Equal(t, ref[1], e["reference"])
				}
			}
			// The summary above a page that reads shows no detail either.
			_, err = f.db.ExecContext(context.Background(), `ALTER TABLE schedule_schedules RENAME COLUMN spec_away TO spec`)
			require.NoError(t, err)
			_, err = f.db.ExecContext(context.Background(), `ALTER TABLE todolist_items RENAME COLUMN attempts TO attempts_away`)
			require.NoError(t, err)
			code, _, body := answer(t, srv.URL+"/workflows", "text/html")
			require.Equal(t, http.StatusOK, code, body)
			require.Contains(t, body, "The summary is incomplete")
			require.NotContains(t, body, "attempts_away")
			requireNoInternals(t, body, "the summary")
		})
	}
}

// Issue 33 point 2: a request that cannot get a connection before its
// deadline (the pool's one connection held here) is answered 503 with
// Retry-After once the deadline passes, saying nothing of the database;
// with the connection back the page reads. Both backends.
func TestARequestThatCannotGetAConnectionIsAnswered503(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			f := newFixture(t, db)
			pool, err := sqldb.Open(context.Background(), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = pool.Close() })
			pool.SetMaxOpenConns(1)
			const deadline = 300 * time.Millisecond
			d, err := dashboard.New(pool.DB, dashboard.WithClock(f.clock), dashboard.WithRequestTimeout(deadline),
				dashboard.WithLogger(slog.New(slog.DiscardHandler)))
			require.NoError(t, err)
			srv := httptest.NewServer(d)
			t.Cleanup(srv.Close)

			held, err := pool.Conn(context.Background())
			require.NoError(t, err)
			for _, c := range []struct{ path, accept string }{{"/schedules", "text/html"}, {"/api/lists", ""}, {"/", ""}} {
				began := time.Now()
				code, retry, body := answer(t, srv.URL+c.path, c.accept)
				took := time.Since(began)
				require.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", c.path, body)
				require.Equal(t, "5", retry, c.path)
				requireNoInternals(t, body, c.path)
				require.Regexp(t, referenceIn, body, c.path)
				require.GreaterOrEqual(t, took, deadline, "%s: answered before its deadline", c.path)
				require.Less(t, took, deadline+5*time.Second, "%s: waited past its deadline", c.path)
			}
			// With the connection back, the pool serves again (through a
			// dashboard with the default deadline: under load a page can
			// take longer than this test's 300 ms).
			require.NoError(t, held.Close())
			again, err := dashboard.New(pool.DB, dashboard.WithClock(f.clock), dashboard.WithLogger(slog.New(slog.DiscardHandler)))
			require.NoError(t, err)
			w := httptest.NewRecorder()
			again.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/schedules", nil))
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		})
	}
}

// Issue 33 point 2: on PostgreSQL a failed connection showed the user,
// database and host of the DSN. A server that refuses the connection is a
// 503 that names none of them.
func TestAnUnreachableDatabaseIsA503ThatNamesNothingOfIt(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig("postgres://dash_secret_user:hunter22@127.0.0.1:1/dash_secret_db?sslmode=disable&connect_timeout=5")
	require.NoError(t, err)
	db := sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	t.Cleanup(func() { _ = db.Close() })
	d, err := dashboard.New(db, dashboard.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	for _, c := range []struct{ path, accept string }{{"/", "text/html"}, {"/api/status", ""}, {"/lists", ""}} {
		code, retry, body := answer(t, srv.URL+c.path, c.accept)
		require.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", c.path, body)
		require.Equal(t, "5", retry)
		requireNoInternals(t, body, c.path)
		for _, s := range []string{"dash_secret_user", "dash_secret_db", "hunter22", "127.0.0.1:1"} {
			require.NotContains(t, body, s, c.path)
		}
	}
}

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
