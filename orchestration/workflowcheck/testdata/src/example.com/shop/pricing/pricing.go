// Package pricing holds helpers that shop's workflows call: their facts
// cross into shop.
package pricing

import (
	"math/rand"
	"sync"

	"example.com/shop/clock"
)

// Quote draws a random number through a helper of its own package.
func Quote(n int) int { return n * jitter() } // want Quote:`^pricing.jitter → math/rand.Intn: random values differ on replay`

func jitter() int { return rand.Intn(3) } // want jitter:`^math/rand.Intn: random values`

// Today reads the clock through another package.
func Today() string { return clock.Read().Format("2006-01-02") } // want Today:`^clock.Read → time.Now: the clock`

// Total is deterministic: it has no fact.
func Total(n int) int { return n * 2 }

// Cart has methods, one of which starts a goroutine.
type Cart struct {
	items []int
	wg    sync.WaitGroup
}

// Add starts a goroutine without go.
func (c *Cart) Add(n int) { // want Add:`^sync.WaitGroup.Go: it starts a goroutine`
	c.items = append(c.items, n)
	c.wg.Go(func() {})
}

// Price is deterministic.
func (c *Cart) Price() int { return Total(len(c.items)) }

// Wait receives from a channel.
func Wait(ch chan int) int { return <-ch } // want Wait:`^channel receive: what arrives`
