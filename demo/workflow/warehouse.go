package workflow

import (
	"context"
	"fmt"
	"sync"

	"github.com/passage-of-time/passage/demo/ordering"
)

// Warehouse is the example's inventory: stock per product, reservations
// held for orders, shipments. It stands for a remote service, so it
// deduplicates what a workflow may send twice — a reservation or a shipment
// asked again under the same idempotency key is answered, not repeated —
// and a release is idempotent by the order: it releases what the order
// still holds, which is nothing the second time.
//
// It keeps everything in memory and a journal of what it actually did
// (Journal). A Warehouse is safe for concurrent use.
type Warehouse struct {
	mu        sync.Mutex
	stock     map[string]int
	byKey     map[string]*reservation   // reservations by idempotency key
	byOrder   map[string][]*reservation // reservations of an order, oldest first
	shipments map[string]string         // tracking number by idempotency key
	journal   []string

	// afterEffect, when set (tests), runs once an operation took effect,
	// before it answers, with the warehouse locked; an error stands for the
	// answer being lost.
	afterEffect func(op, orderID string) error
}

type reservation struct {
	order string
	items []ordering.PricedItem
	state string // "held", "released" or "shipped"
}

// NewWarehouse returns a warehouse holding stock, units per product id.
func NewWarehouse(stock map[string]int) *Warehouse {
	w := &Warehouse{stock: map[string]int{}, byKey: map[string]*reservation{}, byOrder: map[string][]*reservation{}, shipments: map[string]string{}}
	for product, units := range stock {
		w.stock[product] = units
	}
	return w
}

// Reserve holds items for the order, unless key was reserved already, in
// which case it answers as the first time did. A product short of stock
// fails with ErrOutOfStock and holds nothing. It returns the reservation's
// id, which is key.
func (w *Warehouse) Reserve(_ context.Context, key, orderID string, items []ordering.PricedItem) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.byKey[key]; ok {
		return key, w.answer("reserve", orderID)
	}
	need := map[string]int{}
	for _, it := range items {
		need[it.ProductID] += it.Quantity
	}
	for _, it := range items {
		if have := w.stock[it.ProductID]; have < need[it.ProductID] {
			return "", fmt.Errorf("%w: order %s needs %d %s, %d left", ErrOutOfStock, orderID, need[it.ProductID], it.ProductID, have)
		}
	}
	for _, it := range items {
		w.stock[it.ProductID] -= it.Quantity
	}
	r := &reservation{order: orderID, items: append([]ordering.PricedItem(nil), items...), state: "held"}
	w.byKey[key] = r
	w.byOrder[orderID] = append(w.byOrder[orderID], r)
	w.journal = append(w.journal, fmt.Sprintf("reserve %s (key %s)", orderID, key))
	return key, w.answer("reserve", orderID)
}

// Release puts back the stock the order holds; releasing an order that
// holds nothing (released, shipped or never reserved) does nothing.
func (w *Warehouse) Release(_ context.Context, orderID string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.byOrder[orderID] {
		if r.state != "held" {
			continue
		}
		for _, it := range r.items {
			w.stock[it.ProductID] += it.Quantity
		}
		r.state = "released"
		w.journal = append(w.journal, "release "+orderID)
	}
	return w.answer("release", orderID)
}

// Ship sends the stock the order holds and returns the parcel's tracking
// number, unless key was shipped already, in which case it returns the
// same number. An order holding nothing fails with ErrNothingReserved.
func (w *Warehouse) Ship(_ context.Context, key, orderID string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tracking, ok := w.shipments[key]; ok {
		return tracking, w.answer("ship", orderID)
	}
	held := 0
	for _, r := range w.byOrder[orderID] {
		if r.state == "held" {
			r.state = "shipped"
			held++
		}
	}
	if held == 0 {
		return "", fmt.Errorf("%w: order %s", ErrNothingReserved, orderID)
	}
	tracking := fmt.Sprintf("parcel-%d", len(w.shipments)+1)
	w.shipments[key] = tracking
	w.journal = append(w.journal, fmt.Sprintf("ship %s as %s", orderID, tracking))
	return tracking, w.answer("ship", orderID)
}

func (w *Warehouse) answer(op, orderID string) error {
	if w.afterEffect != nil {
		return w.afterEffect(op, orderID)
	}
	return nil
}

// Available returns the units of product neither held nor shipped.
func (w *Warehouse) Available(product string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stock[product]
}

// Journal returns what the warehouse did, oldest first: one line per
// reservation, release and shipment that took effect (answers repeated to
// a key asked again are not in it).
func (w *Warehouse) Journal() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.journal...)
}
