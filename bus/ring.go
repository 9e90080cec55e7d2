package bus

// ring is a growable FIFO on a power-of-two circular buffer, so that a
// queue that fills and empties again does not reallocate.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// pop removes the oldest element; the ring must not be empty.
func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // let the GC have it
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v
}

// popInto appends up to limit of the oldest elements to dst.
func (r *ring[T]) popInto(dst []T, limit int) []T {
	for r.n > 0 && limit > 0 {
		dst = append(dst, r.pop())
		limit--
	}
	return dst
}

func (r *ring[T]) grow() {
	size := max(16, 2*len(r.buf))
	buf := make([]T, size)
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
