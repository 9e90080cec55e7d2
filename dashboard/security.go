package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
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
//     its expiry; logging out forgets it.
//   - Attempts at the token (login forms, bearer headers) are limited per
//     client address, and refusals are logged at most once a minute per
//     client with the number left unlogged.

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

// sessions are the browsers logged in: random ids and their expiry, in
// memory (a restart logs everybody out).
type sessions struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// maxSessions bounds the sessions kept: logins beyond it drop the oldest.
const maxSessions = 1000

// start makes a session lasting until expires and returns its id.
func (s *sessions) start(now, expires time.Time) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := hex.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]time.Time{}
	}
	for k, exp := range s.m {
		if !now.Before(exp) {
			delete(s.m, k)
		}
	}
	for len(s.m) >= maxSessions {
		oldest, at := "", time.Time{}
		for k, exp := range s.m {
			if oldest == "" || exp.Before(at) {
				oldest, at = k, exp
			}
		}
		delete(s.m, oldest)
	}
	s.m[id] = expires
	return id
}

// valid reports whether id is a session that has not expired at now.
func (s *sessions) valid(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.m[id]
	return ok && now.Before(exp)
}

// end forgets id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// Guessing: each client (an IP address; an IPv6 client's /64) may make
// attemptBurst wrong attempts at the token, then one every attemptEvery;
// beyond that its attempts are answered 429 without being checked.
const (
	attemptBurst = 10
	attemptEvery = 6 * time.Second
	// logEvery is how often a client's refusals are logged at most.
	logEvery = time.Minute
	// maxClients bounds the clients remembered.
	maxClients = 10000
)

// client is what the dashboard remembers of one client address.
type client struct {
	tokens float64   // wrong attempts left
	at     time.Time // when tokens was counted
	logged time.Time // the last refusal logged
	quiet  int       // refusals since, not logged
}

type guards struct {
	mu      sync.Mutex
	clients map[string]*client
}

// clientOf is the key a request's attempts are counted under.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// get returns the client of key, refilled to now; g.mu is held.
func (g *guards) get(key string, now time.Time) *client {
	if g.clients == nil {
		g.clients = map[string]*client{}
	}
	c, ok := g.clients[key]
	if !ok {
		if len(g.clients) >= maxClients {
			g.forget(now)
		}
		c = &client{tokens: attemptBurst, at: now}
		g.clients[key] = c
	}
	if elapsed := now.Sub(c.at); elapsed > 0 {
		c.tokens = min(attemptBurst, c.tokens+float64(elapsed)/float64(attemptEvery))
		c.at = now
	}
	return c
}

// forget drops the clients that have all their attempts back and nothing
// left to log; if none has, it drops them all (a flood of addresses).
func (g *guards) forget(now time.Time) {
	for k, c := range g.clients {
		if c.quiet == 0 && c.tokens+float64(now.Sub(c.at))/float64(attemptEvery) >= attemptBurst {
			delete(g.clients, k)
		}
	}
	if len(g.clients) >= maxClients {
		clear(g.clients)
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
