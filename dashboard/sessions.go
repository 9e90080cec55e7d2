package dashboard

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

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
