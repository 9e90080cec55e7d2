package sqldb

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// IsPostgresDSN reports whether dsn names a PostgreSQL database: a
// postgres:// or postgresql:// URL, or a libpq key=value DSN such as
// "host=db.internal user=passage dbname=passage" (one that begins with a
// keyword and "="). A SQLite file whose name begins that way is named
// with a directory, "./host=x.db", or as a file: URI.
func IsPostgresDSN(dsn string) bool {
	dsn = strings.TrimSpace(dsn)
	return isPostgresURL(dsn) || keyValueDSN.MatchString(dsn)
}

func isPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// keyValueDSN matches the start of a libpq key=value DSN: a keyword, then
// "=" (libpq allows spaces around it).
var keyValueDSN = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\s*=`)

// urlScheme matches a URL scheme, "postgres:" in "postgres:broken". One
// letter is a Windows drive, C:\db, and not taken for one.
var urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]+):`)

// ParsePostgres parses a PostgreSQL DSN, URL or key=value, with pgx's
// parser (which also reads PGHOST, PGPASSWORD and the other libpq
// variables, and ~/.pgpass). Its errors wrap [ErrBadDSN] and hold no part
// of the DSN, which may hold a password: only pgx's reason.
func ParsePostgres(dsn string) (*pgx.ConnConfig, error) {
	dsn = strings.TrimSpace(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err == nil {
		// pgx, as libpq, ends a URL's user and password at the first @:
		// an @ left in the host was part of a password not
		// percent-encoded, and would be looked up, and printed, as a
		// host name.
		for _, h := range append([]string{cfg.Host}, fallbackHosts(cfg)...) {
			if strings.Contains(h, "@") {
				return nil, fmt.Errorf("%w: a PostgreSQL URL with an @ in its host (not shown, it may hold a password): percent-encode an @ in a password as %%40, or give the password in PGPASSWORD", ErrBadDSN)
			}
		}
		// Likewise in the database name of a URL: a password with an
		// unencoded / (postgres://u:1234/5678@h) reads as port 1234 and
		// database "5678@h", and pgx's connect errors print both.
		if isPostgresURL(dsn) && strings.Contains(cfg.Database, "@") {
			return nil, fmt.Errorf("%w: a PostgreSQL URL with an @ in its database name (not shown, it may hold a password): percent-encode / and @ in a password as %%2F and %%40, or give the password in PGPASSWORD", ErrBadDSN)
		}
		return cfg, nil
	}
	form := "a key=value DSN"
	hint := "quote a value with spaces or quotes in it, password='a b', or give the password in PGPASSWORD"
	if isPostgresURL(dsn) {
		form = "a PostgreSQL URL"
		hint = "percent-encode # ? % / @ and spaces in a password (%23 %3F %25 %2F %40 %20), or give the password in PGPASSWORD"
	}
	return nil, fmt.Errorf("%w: not %s pgx can parse (not shown, it may hold a password): %s; %s", ErrBadDSN, form, parseReason(err), hint)
}

// parseReason is pgx's reason for refusing a DSN without the DSN: the
// text of a *pgconn.ParseConfigError holds the DSN, redacted only where
// pgx can tell the password apart, and the error it wraps may quote it
// (net/url's does), so only the reason it names is kept.
func parseReason(err error) string {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return "it does not parse"
	}
	bare := *pce
	bare.ConnString = ""
	reason := strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
	if inner := errors.Unwrap(pce); inner != nil {
		reason = strings.TrimSuffix(reason, " ("+inner.Error()+")")
	}
	return reason
}

// CheckSQLitePath refuses a DSN taken for a SQLite path that is not a
// plausible one: a URL of another scheme ("postgres:broken", which
// created a file of that name) or a name with a control character. Its
// errors name the scheme, never the rest.
func CheckSQLitePath(dsn string) error {
	if m := urlScheme.FindStringSubmatch(dsn); m != nil && !strings.EqualFold(m[1], "file") {
		hint := "use a SQLite file path or file: URI, a postgres:// URL, or a key=value DSN"
		if strings.HasPrefix(strings.ToLower(m[1]), "postgres") {
			hint = "a PostgreSQL URL begins postgres://"
		}
		return fmt.Errorf("%w: begins %q, a URL scheme, and is not a URL ticker reads: %s", ErrBadDSN, m[1]+":", hint)
	}
	if i := strings.IndexFunc(dsn, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return fmt.Errorf("%w: a SQLite path with a control character (%q at byte %d)", ErrBadDSN, dsn[i], i)
	}
	return nil
}

// Redact returns dsn as it may be shown in an error or a log: without a
// password. A PostgreSQL DSN, URL or key=value, shows the host, port,
// user and database pgx's parser makes of it — never the text given,
// whose password may end where only that parser can tell; one that does
// not parse (ParsePostgres) is not shown at all. A SQLite DSN shows its
// path and options, any password option replaced by xxxxx.
func Redact(dsn string) string {
	dsn = strings.TrimSpace(dsn)
	switch {
	case IsPostgresDSN(dsn):
		cfg, err := ParsePostgres(dsn)
		if err != nil {
			return "(a PostgreSQL DSN pgx cannot parse: not shown)"
		}
		return fmt.Sprintf("host=%s port=%d user=%s dbname=%s", cfg.Host, cfg.Port, cfg.User, cfg.Database)
	case strings.Contains(dsn, "://"):
		// A URL of a scheme ticker does not read, shown as net/url
		// parses it, without its password.
		u, err := url.Parse(dsn)
		if err != nil {
			return "(not shown)"
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		u.RawQuery = redactQuery(u.RawQuery)
		u.Fragment, u.RawFragment = "", ""
		return u.String()
	case CheckSQLitePath(dsn) != nil:
		return "(not shown)"
	}
	path, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return path
	}
	return path + "?" + redactQuery(query)
}

// redactQuery replaces the values of the query parameters that may hold
// a secret: PostgreSQL's password and sslpassword, go-sqlite3's _auth_pass
// and a SQLCipher _key. A query that does not parse is not shown.
func redactQuery(query string) string {
	if query == "" {
		return ""
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		if secretName(query) {
			return "(options not shown)"
		}
		return query
	}
	for k := range values {
		if secretName(k) {
			values[k] = []string{"xxxxx"}
		}
	}
	return values.Encode()
}

func fallbackHosts(cfg *pgx.ConnConfig) []string {
	var hosts []string
	for _, f := range cfg.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	return hosts
}

// secretName reports whether s names a parameter that may hold a secret.
func secretName(s string) bool {
	s = strings.ToLower(s)
	for _, w := range []string{"pass", "secret", "salt", "key"} {
		if strings.Contains(s, w) && !strings.Contains(s, "_foreign_keys") {
			return true
		}
	}
	return false
}
