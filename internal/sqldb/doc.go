// Package sqldb opens the databases passage stores its state in and hides
// the few differences between them.
//
// SQLite (github.com/mattn/go-sqlite3) is the embedded default: a DSN that is
// a file path (or "file:" URI, or ":memory:") opens SQLite in WAL mode with a
// busy timeout and immediate write transactions, so concurrent writers queue
// instead of failing with "database is locked". A SQLite connection that
// SQLite opened read-only (the file or disk was read-only for a while) is
// closed instead of being pooled, so writes succeed again once the file is
// writable; see [IsReadOnlyError]. A DSN starting with
// "postgres://" or "postgresql://" opens PostgreSQL through pgx's
// database/sql driver.
//
// Every package that stores state declares its schema as a list of
// [Migration] values and applies it with [Migrate]; applied versions are
// recorded per package in one table, so several packages share a database
// without knowing about each other.
//
// Times are stored as [EncodeTime] values: int64 nanoseconds since the Unix
// epoch, UTC. The encoding sorts like the instants it stores, compares with
// plain integer operators in SQL on both engines and never loses precision.
package sqldb
