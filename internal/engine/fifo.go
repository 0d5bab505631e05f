package engine

// fifo is a queue kept in arrival order that also gives up elements from
// its middle: the posted receives and the unexpected messages of a Comm.
// Matching scans it from the oldest element and nearly always removes
// the first (messages arrive, and receives are posted, in the order they
// match), which costs O(1): the start of the live part moves, and the
// dead prefix is reclaimed once it is half the backing array. Removing
// from the middle shifts the shorter side. A plain slice whose removal
// shifts the rest makes a receiver that fell behind a stream of n
// messages pay O(n) for each, O(n²) in all. The zero value is an empty
// queue.
type fifo[E any] struct {
	s    []E // live elements are s[head:]
	head int
}

// Len returns the number of elements.
func (q *fifo[E]) Len() int { return len(q.s) - q.head }

// At returns the i-th oldest element, from 0.
func (q *fifo[E]) At(i int) E { return q.s[q.head+i] }

// All returns the elements, oldest first, for a range loop; the slice is
// valid until the next change.
func (q *fifo[E]) All() []E { return q.s[q.head:] }

// Push appends e.
func (q *fifo[E]) Push(e E) {
	if q.head > 0 && len(q.s) == cap(q.s) && q.head >= len(q.s)/2 {
		// Reclaim the dead prefix instead of growing.
		n := copy(q.s, q.s[q.head:])
		clear(q.s[n:])
		q.s = q.s[:n]
		q.head = 0
	}
	q.s = append(q.s, e)
}

// Remove removes the i-th oldest element, keeping the order of the rest.
func (q *fifo[E]) Remove(i int) {
	var zero E
	live := q.s[q.head:]
	if i < len(live)/2 {
		copy(live[1:i+1], live[:i])
		live[0] = zero
		q.head++
	} else {
		copy(live[i:], live[i+1:])
		live[len(live)-1] = zero
		q.s = q.s[:len(q.s)-1]
	}
	if q.head == len(q.s) {
		q.s = q.s[:0]
		q.head = 0
	}
}
