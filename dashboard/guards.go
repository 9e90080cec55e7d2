package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

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

// guards are the clients that attempted the token, in memory.
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
