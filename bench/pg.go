package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// postgres is the server the PostgreSQL rows run on; each contender gets a
// fresh schema of its own, dropped when the run ends.
type postgres struct {
	admin   *sqldb.DB
	base    string
	schemas []string
}

// openPostgres connects to dsn, or returns nil and a note saying why the
// PostgreSQL rows will be skipped.
func openPostgres(ctx context.Context, dsn string) (*postgres, string) {
	if dsn == "" {
		return nil, "PostgreSQL rows skipped: no DSN (-postgres)."
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db, err := sqldb.Open(cctx, dsn)
	if err != nil {
		return nil, fmt.Sprintf("PostgreSQL rows skipped: %v", err)
	}
	return &postgres{admin: db, base: dsn}, ""
}

// version is the server's version, for the header.
func (p *postgres) version() string {
	if p == nil {
		return "not used"
	}
	var v string
	if err := p.admin.Get(&v, `SHOW server_version`); err != nil {
		return "unknown version"
	}
	return v + " on " + hostOf(p.base)
}

func hostOf(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "?"
	}
	return u.Host
}

// schema creates a fresh schema named after prefix and returns it with a DSN
// whose search_path is that schema.
func (p *postgres) schema(ctx context.Context, prefix string) (name, dsn string, err error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name = "bench_" + prefix + "_" + hex.EncodeToString(b)
	if _, err := p.admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", "", fmt.Errorf("create schema: %w", err)
	}
	p.schemas = append(p.schemas, name)
	u, err := url.Parse(p.base)
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return name, u.String(), nil
}

// Close drops every schema the run created.
func (p *postgres) Close() {
	for _, s := range p.schemas {
		_, _ = p.admin.ExecContext(context.Background(), "DROP SCHEMA "+s+" CASCADE")
	}
	_ = p.admin.Close()
}
