package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/todolist"
)

// fillList adds n items to list, one every 2 seconds from an hour before
// start on, with AddMany.
func fillList(t testing.TB, db *sqlx.DB, list string, n int) {
	t.Helper()
	ctx := context.Background()
	l, err := todolist.Open(ctx, db, list)
	require.NoError(t, err)
	const chunk = 100_000
	items := make([]todolist.NewItem, 0, chunk)
	for i := range n {
		items = append(items, todolist.NewItem{ID: fmt.Sprintf("item-%07d", i), Due: start.Add(-time.Hour + time.Duration(i)*2*time.Second)})
		if len(items) == chunk || i == n-1 {
			require.NoError(t, l.AddMany(ctx, items))
			items = items[:0]
		}
	}
}

// serveAt serves a read-only dashboard of f's database at the instant now.
func (f *fixture) serveAt(t testing.TB, now time.Time) *httptest.Server {
	d, err := dashboard.New(f.db.DB, dashboard.WithClock(clockwork.NewFakeClockAt(now)), dashboard.WithRefresh(0),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	out := ""
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out += ","
		}
		out += string(s[i])
	}
	return out
}

// BenchmarkMillionItemPage serves a page of a list of a million pending
// items (PASSAGE_DASHBOARD_ITEMS sets another size): the server's side of
// what TestBrowserMillionItems measures in the browser.
func BenchmarkMillionItemPage(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("PASSAGE_DASHBOARD_ITEMS"); s != "" {
		_, err := fmt.Sscan(s, &n)
		require.NoError(b, err)
	}
	db := newSQLite(b)
	f := &fixture{db: db}
	fillList(b, db.DB, "big", n)
	srv := f.serveAt(b, start)
	for _, page := range []struct{ name, query string }{
		{"first", ""},
		{"middle", "?after=" + todolist.Cursor{At: start.Add(time.Duration(n) * time.Second), ID: "item"}.String()},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				res, err := http.Get(srv.URL + "/lists/big" + page.query)
				require.NoError(b, err)
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				require.Equal(b, http.StatusOK, res.StatusCode)
			}
		})
	}
}
