// Package sqldb opens the databases passage stores its state in and hides
// the few differences between them.
//
// SQLite (github.com/mattn/go-sqlite3) is the embedded default: a DSN that is
// a file path (or "file:" URI, or ":memory:") opens SQLite in WAL mode with a
// busy timeout and immediate write transactions, so concurrent writers queue
// instead of failing with "database is locked". A SQLite connection that
// SQLite opened read-only (the file or disk was read-only for a while) is
// closed instead of being pooled, so writes succeed again once the file is
// writable; see [IsReadOnlyError]. Whether a connection is read-only is
// asked of SQLite, never of the file: nothing here opens the database
// file (or its -wal and -shm files) from Go while SQLite has it open,
// because closing any descriptor of a file releases every POSIX lock the
// process holds on it, and another process's SQLite would then delete the
// WAL under this one. A DSN starting with "postgres://" or
// "postgresql://" opens PostgreSQL through pgx's database/sql driver.
//
// Built without cgo (CGO_ENABLED=0), the package still builds and opens
// PostgreSQL; a SQLite DSN fails with [ErrSQLiteNeedsCGO], which says
// what to do (sqlite_nocgo.go).
//
// Pools are bounded (pool.go): ten connections to PostgreSQL unless the
// DSN's pool_max_conns or [WithMaxConns] says otherwise, eight to SQLite,
// all kept when idle. A caller waiting for a connection waits until its
// context ends.
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
