package sqldb

import (
	"strings"
)

// Case-insensitive filters (a schedule's or a list's name containing "é")
// ignore case as Go's strings.ToLower does: Unicode's simple lower-case
// mapping, letter by letter. PostgreSQL's lower() applies the same mapping
// under a UTF-8 LC_CTYPE (C.UTF-8, en_US.UTF-8: every script); SQLite's
// folds ASCII alone, so "Équipe" did not contain "é" on SQLite and did on
// PostgreSQL. Every SQLite connection this package opens has
// passage_lower(), strings.ToLower, beside the built-in, and
// [ContainsFolded] writes the condition each database needs. (A
// PostgreSQL database created with LC_CTYPE C folds ASCII alone:
// docs/postgres.md.)

// SQLiteDriverName is the database/sql name of mattn/go-sqlite3's driver
// with passage's functions on every connection (passage_lower), for a
// caller that opens SQLite itself with options of its own, as the CLI's
// read-only opens do. Pass "sqlite3" to sqlx as the driver name: it picks
// the placeholders and [DialectOf] by it.
const SQLiteDriverName = "sqlite3-passage"

// ContainsFolded returns the condition that column contains match,
// ignoring case as strings.ToLower does, % and _ matched as themselves,
// and its arguments, in dialect's SQL ("?" placeholders).
//
// On PostgreSQL it is lower(column) LIKE the lowered pattern. On SQLite,
// calling passage_lower (Go, through cgo and reflection) on every row made
// a search of 100,000 names ten times slower than the built-in, so the
// built-in LIKE, which ignores ASCII case in C, answers for names of
// printable ASCII alone, and passage_lower is called only for names with
// another character (GLOB '*[^ -~]*'). That is exact: for an ASCII name
// the built-in folds what strings.ToLower folds; a match of the built-in
// is a match of passage_lower (the pattern is lowered already); and a name
// with a character the built-in does not fold — É, or the Kelvin sign K
// that lowers to an ASCII k — goes through passage_lower.
func ContainsFolded(dialect Dialect, column, match string) (string, []any) {
	pattern := "%" + likeEscaper.Replace(strings.ToLower(match)) + "%"
	if dialect == Postgres {
		return `lower(` + column + `) LIKE ? ESCAPE '\'`, []any{pattern}
	}
	return `(` + column + ` LIKE ? ESCAPE '\' OR (` + column + ` GLOB '*[^ -~]*' AND passage_lower(` + column + `) LIKE ? ESCAPE '\'))`, []any{pattern, pattern}
}

// likeEscaper escapes LIKE's wildcards and its escape character.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
