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

// lowered asks the database for every rune lowered, one per row: lower()
// on PostgreSQL, passage_lower() on SQLite.
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
	rows, err := db.Queryx(db.Rebind(`SELECT v, lower(v) FROM (VALUES `+b.String()+`) AS t(v)`), args...)
	if db.DriverName() != "pgx" {
		// SQLite names a VALUES column column1 and takes no alias list.
		rows, err = db.Queryx(`SELECT column1, passage_lower(column1) FROM (VALUES `+b.String()+`)`, args...)
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
// sqldb, passage_lower() lowers every letter of these scripts as Go's
// strings.ToLower does (the built-in lowers ASCII alone), and the same
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
	require.NoError(t, db.QueryRowContext(context.Background(), `SELECT passage_lower(NULL)`).Scan(&null))
	require.Nil(t, null)
}

// TestLowerFoldsTheSameLettersOnSQLiteAndPostgreSQL: PostgreSQL's lower()
// under a UTF-8 LC_CTYPE and SQLite's passage_lower() lower each
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

// TestContainsFoldedAgreesWithStringsContains: the condition ContainsFolded
// writes keeps, on each database, exactly the names that contain the
// match once both are lowered by strings.ToLower — the oracle, run here
// name by name — including names SQLite's built-in LIKE folds alone
// (ASCII), names it cannot (É, Ж), the Kelvin sign and the dotted capital
// I that lower to ASCII letters, and LIKE's own wildcards.
func TestContainsFoldedAgreesWithStringsContains(t *testing.T) {
	t.Parallel()
	names := []string{"Billing", "BILLING-eu", "billing_%", "Équipe", "ÉQUIPE-2", "équipe", "ЖУК", "жук-1",
		"\u212aelvin", "KELVIN", "\u0130stanbul", "istanbul", "Straße", "STRASSE", "a%b", "a_b", "a\\b", "Σίσυφος"}
	matches := []string{"", "billing", "BILL", "é", "ÉQUIPE", "ж", "k", "kelvin", "i", "ist", "ß", "%", "_", "\\", "a%", "σ", "ς", "x"}
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := b.Open(t)
			if b.Name == "postgres" {
				var ctype string
				require.NoError(t, db.Get(&ctype, `SHOW lc_ctype`))
				if !strings.Contains(strings.ToLower(strings.ReplaceAll(ctype, "-", "")), "utf8") {
					t.Skipf("lc_ctype %s: not UTF-8", ctype)
				}
			}
			_, err := db.Exec(`CREATE TABLE names (name TEXT NOT NULL)`)
			require.NoError(t, err)
			for _, n := range names {
				_, err := db.Exec(db.Rebind(`INSERT INTO names (name) VALUES (?)`), n)
				require.NoError(t, err)
			}
			for _, m := range matches {
				var want []string
				for _, n := range names {
					if strings.Contains(strings.ToLower(n), strings.ToLower(m)) {
						want = append(want, n)
					}
				}
				cond, args := sqldb.ContainsFolded(db.Dialect, "name", m)
				var got []string
				require.NoError(t, db.Select(&got, db.Rebind(`SELECT name FROM names WHERE `+cond), args...))
				require.ElementsMatch(t, want, got, "match %q", m)
			}
		})
	}
}
