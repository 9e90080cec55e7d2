package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
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
