// Package sqldbtest gives tests a fresh, isolated database per backend: a
// SQLite file in t.TempDir() always, and a PostgreSQL schema of its own when
// the PASSAGE_TEST_POSTGRES environment variable holds a DSN. Store test
// suites loop over [Backends] so one suite exercises every engine.
package sqldbtest
