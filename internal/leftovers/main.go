// Command leftovers lists what lives on the shared test servers that a
// test could have left there, so CI can fail when the suite leaves
// something behind (issue 34: tests leave nothing on the shared servers).
//
// On the PostgreSQL server of PASSAGE_TEST_POSTGRES it lists the schemas of
// that database (but public, information_schema and PostgreSQL's own), the
// tables of its public schema, and the server's databases; on the NATS
// server of PASSAGE_TEST_NATS, the JetStream streams (key-value buckets and
// object stores are streams too). A server whose variable is unset is not
// asked. One object a line, "<kind> <name>", sorted.
//
// The servers are shared and may hold what is not the suite's, so the
// check is against a snapshot taken before it:
//
//	go run ./internal/leftovers > before
//	go test ./...
//	go run ./internal/leftovers -since before
//
// With -since it prints what is there now and was not in the snapshot,
// and exits 1 if anything is.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/internal/sqldb"
)

func main() {
	since := flag.String("since", "", "a snapshot this command printed before: list only what is new since, and exit 1 if anything is")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now, err := list(ctx, os.Getenv("PASSAGE_TEST_POSTGRES"), os.Getenv("PASSAGE_TEST_NATS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "leftovers:", err)
		os.Exit(1)
	}
	if *since == "" {
		for _, o := range now {
			fmt.Println(o)
		}
		return
	}
	before, err := readSnapshot(*since)
	if err != nil {
		fmt.Fprintln(os.Stderr, "leftovers:", err)
		os.Exit(1)
	}
	left := newSince(now, before)
	if len(left) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "leftovers: %d on the test servers that were not there before the suite:\n", len(left))
	for _, o := range left {
		fmt.Println(o)
	}
	os.Exit(1)
}

// list returns every object on the servers, "<kind> <name>", sorted.
func list(ctx context.Context, postgres, natsURL string) ([]string, error) {
	var all []string
	if postgres != "" {
		objs, err := listPostgres(ctx, postgres)
		if err != nil {
			return nil, fmt.Errorf("PostgreSQL: %w", err)
		}
		all = append(all, objs...)
	}
	if natsURL != "" {
		objs, err := listStreams(ctx, natsURL)
		if err != nil {
			return nil, fmt.Errorf("NATS %s: %w", natsURL, err)
		}
		all = append(all, objs...)
	}
	slices.Sort(all)
	return all, nil
}

// listPostgres lists the database's schemas and public tables, and the
// server's databases.
func listPostgres(ctx context.Context, dsn string) ([]string, error) {
	db, err := sqldb.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var objs []string
	for _, q := range []struct{ kind, query string }{
		{"schema", `SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('public', 'information_schema') AND nspname !~ '^pg_'`},
		{"table", `SELECT 'public.' || tablename FROM pg_tables WHERE schemaname = 'public'`},
		{"database", `SELECT datname FROM pg_database`},
	} {
		var names []string
		if err := db.SelectContext(ctx, &names, q.query); err != nil {
			return nil, fmt.Errorf("list %ss: %w", q.kind, err)
		}
		for _, n := range names {
			objs = append(objs, q.kind+" "+n)
		}
	}
	return objs, nil
}

// listStreams lists the JetStream streams.
func listStreams(ctx context.Context, url string) ([]string, error) {
	nc, err := nats.Connect(url, nats.Name("passage leftovers"))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	names := js.StreamNames(ctx)
	var objs []string
	for n := range names.Name() {
		objs = append(objs, "stream "+n)
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("list streams: %w", err)
	}
	return objs, nil
}

// newSince returns what of now is not in before, in now's order.
func newSince(now []string, before map[string]bool) []string {
	var left []string
	for _, o := range now {
		if !before[o] {
			left = append(left, o)
		}
	}
	return left
}

// readSnapshot reads what list printed before.
func readSnapshot(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			seen[line] = true
		}
	}
	return seen, sc.Err()
}
