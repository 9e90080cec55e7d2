package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// What the dashboard trusts, and what it does not (the package
// documentation says it for operators):
//
//   - The Host header names the dashboard only when it is an IP address,
//     "localhost" or a name below it, or a name given to WithAllowedHosts.
//     Any other name may be a DNS-rebinding name another site resolves to
//     this server, to read the pages through an operator's browser; such
//     requests are answered 421 before anything is read.
//   - A browser session is a random id the dashboard keeps in memory with
//     its expiry; logging out forgets it (sessions.go).
//   - Attempts at the token (login forms, bearer headers) are limited per
//     client address, and refusals are logged at most once a minute per
//     client with the number left unlogged (guards.go).

// WithAllowedHosts adds host names the dashboard answers for, beside the
// ones it always answers for: IP addresses, "localhost" and names below
// it (which browsers resolve to loopback themselves). A request naming
// any other host in its Host header is refused with 421 Misdirected
// Request, so that a page of another site cannot read the dashboard
// through a DNS name it points at this server (DNS rebinding). Give the
// names the dashboard is reached by: "dash.example.com", or behind a
// proxy the name the proxy forwards in Host. A name starting with "."
// allows the names below it. Ports are ignored.
func WithAllowedHosts(names ...string) Option {
	return func(d *Dashboard) error {
		for _, n := range names {
			h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), ".")
			if h == "" || h == "." || strings.ContainsAny(h, "/:@ ") {
				return fmt.Errorf("%w: allowed host %q: want a host name such as dash.example.com, without scheme or port", ErrInvalidOption, n)
			}
			d.hosts = append(d.hosts, h)
		}
		return nil
	}
}

// hostAllowed reports whether a request's Host header names this
// dashboard (see WithAllowedHosts).
func (d *Dashboard) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, h := range d.hosts {
		if host == h || strings.HasPrefix(h, ".") && strings.HasSuffix(host, h) {
			return true
		}
	}
	return false
}

// checkHost refuses the requests whose Host the dashboard does not answer
// for, before anything is read.
func (d *Dashboard) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.hostAllowed(r.Host) {
			d.refused(r, "host not allowed")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusMisdirectedRequest)
			fmt.Fprintln(w, "dashboard: this dashboard does not answer for this host name; its operator can allow it (--allowed-host, WithAllowedHosts)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// WithSessionTTL sets how long a browser stays logged in (default 12h).
func WithSessionTTL(ttl time.Duration) Option {
	return func(d *Dashboard) error {
		if ttl < time.Minute {
			return fmt.Errorf("%w: session ttl %s: want a minute or more", ErrInvalidOption, ttl)
		}
		d.sessionTTL = ttl
		return nil
	}
}

// WithSecureCookie marks the session cookie Secure (sent over HTTPS
// only) even when the request reaching the dashboard is plain HTTP: set
// it behind a proxy that ends TLS. Without it, the cookie is Secure when
// the request came over TLS to this server.
func WithSecureCookie(secure bool) Option {
	return func(d *Dashboard) error {
		d.secureCookie = secure
		return nil
	}
}

// mayAttempt reports whether r's client has an attempt left.
func (d *Dashboard) mayAttempt(r *http.Request) bool {
	d.guards.mu.Lock()
	defer d.guards.mu.Unlock()
	return d.guards.get(clientOf(r), d.clock.Now()).tokens >= 1
}

// wrongAttempt spends one of r's client's attempts.
func (d *Dashboard) wrongAttempt(r *http.Request) {
	d.guards.mu.Lock()
	defer d.guards.mu.Unlock()
	c := d.guards.get(clientOf(r), d.clock.Now())
	c.tokens = max(0, c.tokens-1)
}

// refused logs a refusal of r: the first of its client in a minute as a
// line of its own, carrying how many were refused and not logged since
// the line before; the others are only counted.
func (d *Dashboard) refused(r *http.Request, reason string) {
	key := clientOf(r)
	now := d.clock.Now()
	d.guards.mu.Lock()
	c := d.guards.get(key, now)
	if !c.logged.IsZero() && now.Sub(c.logged) < logEvery {
		c.quiet++
		d.guards.mu.Unlock()
		return
	}
	quiet := c.quiet
	c.logged, c.quiet = now, 0
	d.guards.mu.Unlock()
	d.logger.Warn("dashboard: refused", "reason", reason, "path", r.URL.Path, "remote", key,
		"unlogged_refusals", quiet, "next_line_in", logEvery.String())
}

// tokenIs compares a presented token with the admin token in constant
// time, whatever their lengths.
func (d *Dashboard) tokenIs(presented string) bool {
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(d.token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// sessionCookie names the admin session cookie.
const sessionCookie = "passage_admin"

// auth is what a request proved about the admin token.
type auth int

const (
	authNone    auth = iota // no token presented, or no session
	authAdmin               // the token, or a live session
	authWrong               // a wrong bearer token
	authLimited             // a bearer token from a client out of attempts: not checked
)

// authenticate reads a bearer token (API clients) or the session cookie
// (browsers, set by /login). A bearer token is an attempt at the token,
// limited per client like a login.
func (d *Dashboard) authenticate(r *http.Request) auth {
	if d.token == "" {
		return authNone
	}
	if h := r.Header.Get("Authorization"); h != "" {
		if !d.mayAttempt(r) {
			return authLimited
		}
		if bearer, ok := strings.CutPrefix(h, "Bearer "); ok && d.tokenIs(bearer) {
			return authAdmin
		}
		d.wrongAttempt(r)
		return authWrong
	}
	if c, err := r.Cookie(sessionCookie); err == nil && d.sessions.valid(c.Value, d.clock.Now()) {
		return authAdmin
	}
	return authNone
}

// admin reports whether r proves it knows the token.
func (d *Dashboard) admin(r *http.Request) bool { return d.authenticate(r) == authAdmin }
