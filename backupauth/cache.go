package backupauth

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// decision is a cached answer of the apiserver: the caller's name when
// allowed, or the error to return.
type decision struct {
	caller  string
	err     error
	expires time.Time
}

// decisionCache keeps decisions until they expire, at most max of them. Its
// keys hold a hash of the token, never the token.
type decisionCache struct {
	clock clock.PassiveClock
	max   int

	mu      sync.Mutex // guards entries
	entries map[string]decision
}

func newDecisionCache(c clock.PassiveClock, max int) *decisionCache {
	return &decisionCache{clock: c, max: max, entries: make(map[string]decision)}
}

// get returns the unexpired decision for key.
func (c *decisionCache) get(key string) (decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.entries[key]
	if !ok {
		return decision{}, false
	}
	if !c.clock.Now().Before(d.expires) {
		delete(c.entries, key)
		return decision{}, false
	}
	return d, true
}

// put keeps d for ttl. When the cache is full it drops the expired
// decisions and, if none had expired, an arbitrary one.
func (c *decisionCache) put(key string, d decision, ttl time.Duration) {
	now := c.clock.Now()
	d.expires = now.Add(ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		c.evictLocked(now)
	}
	c.entries[key] = d
}

// evictLocked makes room for one entry. c.mu must be held.
func (c *decisionCache) evictLocked(now time.Time) {
	for k, d := range c.entries {
		if !now.Before(d.expires) {
			delete(c.entries, k)
		}
	}
	for k := range c.entries {
		if len(c.entries) < c.max {
			return
		}
		delete(c.entries, k)
	}
}

// len returns the number of entries, expired ones included.
func (c *decisionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
