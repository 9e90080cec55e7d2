// Package shop has workflows that call helpers breaking the rules: in their
// own package, in another, two packages away, through methods, generics and
// recursion. Its path has a dot, so its functions' facts are exported.
package shop

import (
	"context"
	"log"
	"time"

	"example.com/shop/pricing"
	"plain"

	"github.com/passage-of-time/passage/orchestration"
)

// Order calls each helper.
func Order(ctx orchestration.Context, c *pricing.Cart, ch chan int) error {
	_ = stamp()           // want `call to shop.stamp in workflow code: shop.stamp → time.Now: the clock reads differently on replay; use ctx.Now\(\)`
	_ = twice()           // want `call to shop.twice in workflow code: shop.twice → shop.stamp → time.Now: the clock`
	_ = pricing.Quote(1)  // want `call to pricing.Quote in workflow code: pricing.Quote → pricing.jitter → math/rand.Intn: random values differ on replay`
	_ = pricing.Today()   // want `call to pricing.Today in workflow code: pricing.Today → clock.Read → time.Now: the clock`
	c.Add(1)              // want `call to \(\*pricing.Cart\).Add in workflow code: \(\*pricing.Cart\).Add → sync.WaitGroup.Go: it starts a goroutine`
	_ = pricing.Wait(ch)  // want `call to pricing.Wait in workflow code: pricing.Wait → channel receive: what arrives`
	_ = c.Price()         // deterministic: fine
	_ = pricing.Total(2)  // deterministic: fine
	_ = first([]int{1})   // want `call to shop.first in workflow code: shop.first → time.Now`
	_ = box[int]{}.open() // want `call to shop.box\[T\].open in workflow code: shop.box\[T\].open → time.Now`
	_ = wall{}.Stamp()    // want `call to shop.wall.Stamp in workflow code: shop.wall.Stamp → time.Now`
	var s stamper = wall{}
	_ = s.Stamp()        // an interface method: not followed
	f := stamp           // want `shop.stamp taken as a value in workflow code: shop.stamp → time.Now`
	_ = f()              // a function value: not followed
	_ = plain.Stamp()    // a package taken for the standard library: not followed
	log.Print("ordered") // the standard library: not followed
	record("r", ctx)     // its Compensate body is exempt: fine
	register()           // the workflow inside is checked on its own: fine
	return nil
}

// Recursion calls recursive helpers: the walk ends and names a shortest
// chain.
func Recursion(ctx orchestration.Context) {
	_ = even(4) // want `call to shop.even in workflow code: shop.even → shop.odd → time.Now`
	pong(1)     // want `call to shop.pong in workflow code: shop.pong → shop.ping → time.Now`
	_ = fact(3) // recursive but deterministic: fine
	_ = tick(3) // mutually recursive and deterministic: fine
}

// Steps calls the same helpers from Step bodies: nothing is reported.
func Steps(ctx orchestration.Context) error {
	_, err := orchestration.Step(ctx, "stamp", func(context.Context, orchestration.StepInfo) (time.Time, error) {
		_ = pricing.Quote(1)
		return stamp(), nil
	})
	if err != nil {
		return err
	}
	_, err = orchestration.Step(ctx, "quote", quote)
	return err
}

// quote is a step body by name: it has a fact, but Step does not run it in
// workflow code.
func quote(context.Context, orchestration.StepInfo) (int, error) { // want quote:`^pricing.Quote → pricing.jitter → math/rand.Intn`
	return pricing.Quote(2), nil
}

// Plain is not a workflow: it calls the helpers unreported, and has a fact
// of its own.
func Plain() time.Time { // want Plain:`^shop.twice → shop.stamp → time.Now`
	_ = twice()
	return time.Time{}
}

func stamp() time.Time { return time.Now() } // want stamp:`^time.Now: the clock`

func twice() time.Duration { return stamp().Sub(stamp()) } // want twice:`^shop.stamp → time.Now`

func first[T any](xs []T) T { // want first:`^time.Now`
	_ = time.Now()
	return xs[0]
}

type box[T any] struct{}

func (box[T]) open() T { // want open:`^time.Now`
	_ = time.Now()
	var zero T
	return zero
}

type stamper interface{ Stamp() time.Time }

type wall struct{}

func (wall) Stamp() time.Time { return time.Now() } // want Stamp:`^time.Now`

func even(n int) bool { // want even:`^shop.odd → time.Now`
	if n == 0 {
		return true
	}
	return odd(n - 1)
}

func odd(n int) bool { // want odd:`^time.Now`
	if n == 0 {
		return time.Now().IsZero()
	}
	return even(n - 1)
}

// ping reads the clock only after pong, which calls ping back: pong's fact
// comes through the cycle.
func ping(n int) { // want ping:`^time.Now`
	if n > 0 {
		pong(n - 1)
	}
	_ = time.Now()
}

func pong(n int) { ping(n) } // want pong:`^shop.ping → time.Now`

func fact(n int) int {
	if n == 0 {
		return 1
	}
	return n * fact(n-1)
}

func tick(n int) int {
	if n == 0 {
		return 0
	}
	return tock(n - 1)
}

func tock(n int) int { return tick(n) }

// record takes the Context second, so it is not a workflow; the body it
// gives Compensate is exempt all the same.
func record(name string, ctx orchestration.Context) {
	orchestration.Compensate(ctx, name, func(context.Context) error {
		_ = time.Now()
		return nil
	})
}

// register holds a workflow literal, checked where it is.
func register() {
	_ = func(ctx orchestration.Context) {
		_ = time.Now() // want `time.Now in workflow code`
	}
}
