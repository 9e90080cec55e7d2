package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3" // the embedded database

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/todolist"
)

// Mount the dashboard in a program's own server, read-only.
func Example() {
	dir, _ := os.MkdirTemp("", "dashboard")
	defer os.RemoveAll(dir)
	db, err := sqlx.Open("sqlite3", filepath.Join(dir, "passage.db")+"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := todolist.Open(context.Background(), db, "unpaid-orders"); err != nil {
		panic(err)
	}

	d, err := dashboard.New(db) // add dashboard.WithAdminToken(token) to allow actions
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", d) // at the root: its links are absolute
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Post(srv.URL+"/schedules/nightly/pause", "", nil)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, string(body))
	// Output:
	// 403 dashboard: read-only: no admin token is configured (start it with --admin-token or PASSAGE_ADMIN_TOKEN to allow actions)
}
