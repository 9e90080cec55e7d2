//go:build passage_deps

// This file pins the project's fixed dependencies in go.mod while the
// packages that use them are written; it is never built.
package passage

import (
	_ "github.com/go-co-op/gocron/v2"
	_ "github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/jmoiron/sqlx"
	_ "github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
)
