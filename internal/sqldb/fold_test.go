package sqldb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// foldScripts are the letters a name is likely to hold: Latin with its
// accents, Greek, Cyrillic, Armenian.
var foldScripts = []*unicode.RangeTable{unicode.Latin, unicode.Greek, unicode.Cyrillic, unicode.Armenian}

func lettersOf(tables ...*unicode.RangeTable) []rune {
	var out []rune
	for _, t := range tables {
		for _, r16 := range t.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				out = append(out, r)
			}
		}
		for _, r32 := range t.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				out = append(out, r)
			}
		}
	}
	return out
}

// lowered asks the database for lower() of every rune, one per row.
func lowered(t *testing.T, db *sqlx.DB, runes []rune) map[rune]string {
	t.Helper()
	values := make([]string, len(runes))
	for i, r := range runes {
		values[i] = string(r)
	}
	// One statement: a VALUES list of every letter.
	var b strings.Builder
	args := make([]any, 0, len(values))
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?)")
		args = append(args, v)
	}
	rows, err := db.Queryx(db.Rebind(`SELECT v, LOWER(v) FROM (VALUES `+b.String()+`) AS t(v)`), args...)
	if db.DriverName() != "pgx" {
		// SQLite names a VALUES column column1 and takes no alias list.
		rows, err = db.Queryx(`SELECT column1, LOWER(column1) FROM (VALUES `+b.String()+`)`, args...)
	}
	require.NoError(t, err)
	defer rows.Close()
	out := map[rune]string{}
	for rows.Next() {
		var v, l string
		require.NoError(t, rows.Scan(&v, &l))
		out[[]rune(v)[0]] = l
	}
	require.NoError(t, rows.Err())
	return out
}

// TestLowerFoldsTheLettersStringsToLowerFolds: on a SQLite connection of
// sqldb, lower() lowers every letter of these scripts as Go's
// strings.ToLower does (the built-in lowered ASCII alone), and the same
// holds for the driver registered for callers that open SQLite themselves.
func TestLowerFoldsTheLettersStringsToLowerFolds(t *testing.T) {
	t.Parallel()
	letters := lettersOf(foldScripts...)
	db, path := sqldbtest.SQLite(t)
	plain, err := sqlx.Open(sqldb.SQLiteDriverName, "file:"+filepath.ToSlash(path)+"?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	for name, h := range map[string]*sqlx.DB{"sqldb.Open": db.DB, sqldb.SQLiteDriverName: plain} {
		got := lowered(t, h, letters)
		for _, r := range letters {
			require.Equal(t, strings.ToLower(string(r)), got[r], "%s: lower(%q) %U", name, r, r)
		}
	}
	var null any = "x"
	require.NoError(t, db.QueryRowContext(context.Background(), `SELECT LOWER(NULL)`).Scan(&null))
	require.Nil(t, null)
}

// TestLowerFoldsTheSameLettersOnSQLiteAndPostgreSQL: PostgreSQL's lower()
// under a UTF-8 LC_CTYPE and SQLite's, as sqldb opens it, lower each
// letter of these scripts to the same text — compared letter by letter,
// PostgreSQL answering for itself. A database whose LC_CTYPE is not UTF-8
// folds ASCII alone, as docs/postgres.md says: the test skips there.
func TestLowerFoldsTheSameLettersOnSQLiteAndPostgreSQL(t *testing.T) {
	t.Parallel()
	pg, _ := sqldbtest.Postgres(t)
	var ctype string
	require.NoError(t, pg.Get(&ctype, `SHOW lc_ctype`))
	if !strings.Contains(strings.ToLower(strings.ReplaceAll(ctype, "-", "")), "utf8") {
		t.Skipf("lc_ctype %s: not UTF-8, PostgreSQL folds ASCII alone", ctype)
	}
	lite, _ := sqldbtest.SQLite(t)
	letters := lettersOf(foldScripts...)
	fromPG, fromSQLite := lowered(t, pg.DB, letters), lowered(t, lite.DB, letters)
	var differ []string
	for _, r := range letters {
		if fromPG[r] != fromSQLite[r] {
			differ = append(differ, fmt.Sprintf("%U %q: PostgreSQL %q, SQLite %q", r, r, fromPG[r], fromSQLite[r]))
		}
	}
	if len(differ) > 0 {
		t.Fatalf("%d of %d letters lowered differently; the first: %s", len(differ), len(letters), strings.Join(differ[:min(len(differ), 10)], "; "))
	}
}
