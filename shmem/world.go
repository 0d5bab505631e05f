package shmem

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/symheap"
)

// Errors. Besides these, calls return narma's errors (narma.ErrRank for a
// PE out of range, narma.ErrBounds for a transfer longer than its
// symmetric object, narma.ErrInvalid for other bad arguments,
// narma.ErrFreed for a freed CT, ...) and context errors; errors.Is works
// on all of them.
var (
	// ErrNotSymmetric: an address that is not inside a live symmetric
	// object (freed, or out of range of every object), or a collective
	// call to which PEs passed different arguments.
	ErrNotSymmetric = symheap.ErrNotSymmetric
	// ErrNoMemory: the symmetric heap has no free block large enough.
	ErrNoMemory = symheap.ErrNoMemory
	// ErrFinalized: a call on a World after Finalize.
	ErrFinalized = errors.New("shmem: finalized")
)

// DefaultHeapSize is the size of the symmetric heap on every PE unless
// WithHeapSize says otherwise: 16 MiB.
const DefaultHeapSize = 16 << 20

// barrierTag is the tag of Barrier's messages, on the World's private
// duplicate of the Comm (so no message of the program can match them).
const barrierTag = 1

// Option configures Init.
type Option func(*config)

type config struct {
	heapSize int
}

// WithHeapSize sets the size in bytes of the symmetric heap on every PE
// (DefaultHeapSize by default). Every PE must pass the same size.
func WithHeapSize(bytes int) Option {
	return func(c *config) { c.heapSize = bytes }
}

// World is one PE's view of an OpenSHMEM job: its PE number, the number of
// PEs and the symmetric heap. Init makes it, collectively; Finalize ends
// it.
//
// A World is used by one goroutine of its PE at a time, like the narma
// window underneath (OpenSHMEM's SHMEM_THREAD_SERIALIZED); other
// goroutines of the PE communicate through contexts (Ctx), whose calls
// may run alongside the World's (see Ctx). Its zero value is not usable,
// and it must not be copied.
type World struct {
	c     *narma.Comm
	priv  *narma.Comm // a duplicate of c for the package's own messages
	heap  *symheap.Heap
	win   *narma.Win[byte] // the heap's window, displacements in bytes
	me, n int
	job   <-chan struct{} // closed when the job is aborted
	done  bool            // set with mu held: contexts read it with mu held

	// mu serializes the calls on the heap window (narma windows are used
	// by one goroutine at a time): the World's calls that issue or
	// complete operations hold it around them, and so do the calls on
	// contexts, which other goroutines make.
	mu sync.Mutex

	// The World's own typed views and checked spans; each context has
	// its own (Ctx.cache), so that no goroutine touches another's.
	own cache

	// gen counts the Frees: a cache made under another generation
	// forgets its spans.
	gen atomic.Uint64

	world, shared *Team // TeamWorld and TeamShared
}

// cache holds typed views of the heap window and the spans that Check
// accepted, for the World or for one context.
type cache struct {
	// Typed views of the heap window: of the ten basic element types by
	// basicIndex, of types defined on them by type.
	views   [10]any
	defined map[reflect.Type]any

	// Spans of the heap that Check accepted since the last Free (gen):
	// a span inside a live object stays inside it until something is
	// freed.
	valid [4]span
	nextV int
	gen   uint64
}

// span is a range of bytes of the heap.
type span struct{ off, n int }

// Init starts OpenSHMEM on every rank of c, collectively: it creates the
// symmetric heap (one narma window, locked for the World's whole life)
// and the predefined teams (TeamWorld, TeamShared), and returns this PE's
// World. PE numbers are c's ranks.
func Init(ctx context.Context, c *narma.Comm, opts ...Option) (*World, error) {
	if c == nil {
		return nil, &narma.OpError{Op: "shmem.Init", Rank: -1, Detail: "nil Comm", Err: narma.ErrInvalid}
	}
	cfg := config{heapSize: DefaultHeapSize}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	// The heap size is checked, and agreed on, by symheap.New: a PE with
	// a bad one must still take part in the collective calls below.
	priv, err := c.Dup(ctx)
	if err != nil {
		return nil, err
	}
	w := &World{
		c:    c,
		priv: priv,
		me:   c.Rank(),
		n:    c.Size(),
		job:  c.Context().Done(),
	}
	// The teams first: if their collective calls fail, there is no heap
	// to free.
	if err := w.predefinedTeams(ctx); err != nil {
		return nil, err
	}
	h, err := symheap.New(ctx, priv, cfg.heapSize)
	if err != nil {
		return nil, err
	}
	w.heap, w.win = h, h.Win()
	return w, nil
}

// MyPE returns this PE's number, in [0, NPEs()); -1 for a nil World.
func (w *World) MyPE() int {
	if w == nil {
		return -1
	}
	return w.me
}

// NPEs returns the number of PEs; 0 for a nil World.
func (w *World) NPEs() int {
	if w == nil {
		return 0
	}
	return w.n
}

// Comm returns the communicator the World was made from.
func (w *World) Comm() *narma.Comm {
	if w == nil {
		return nil
	}
	return w.c
}

// HeapSize returns the size in bytes of the symmetric heap.
func (w *World) HeapSize() int {
	if w == nil {
		return 0
	}
	return w.heap.Size()
}

// Finalize ends the World, collectively: it completes every operation
// this PE issued, waits for every PE, and frees the symmetric heap. Every
// later call on the World fails with ErrFinalized.
func (w *World) Finalize(ctx context.Context) error {
	if err := w.ok("Finalize"); err != nil {
		return err
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
	w.own = cache{}
	return w.heap.Close(ctx)
}

// ok is the guard of every call: a nil or finalized World is an error,
// never a panic.
func (w *World) ok(op string) error {
	if w == nil {
		return &narma.OpError{Op: "shmem." + op, Rank: -1, Detail: "nil World", Err: narma.ErrInvalid}
	}
	if w.done {
		return &narma.OpError{Op: "shmem." + op, Rank: w.me, Err: ErrFinalized}
	}
	return nil
}

// opErr builds the error of a failed shmem call.
func (w *World) opErr(op string, err error, format string, args ...any) error {
	return &narma.OpError{Op: "shmem." + op, Rank: w.me, Detail: fmt.Sprintf(format, args...), Err: err}
}

// view is the heap's window seen as elements of T (narma.As), with the
// per-type scratch words that single-element operations need: they live
// in the World, not on the caller's stack, so that handing their address
// to narma allocates nothing.
type view[T narma.Elem] struct {
	win   *narma.Win[T]
	local []T
	size  int  // bytes per element
	one   [1]T // operand of P and result of G and of fetching atomics
	sink  T    // result of non-fetching atomics, discarded
	probe []T  // values of the vector WaitUntil and Test forms
}

// viewOf returns w's own view for T, made on first use.
func viewOf[T narma.Elem](w *World) *view[T] { return viewIn[T](w, &w.own) }

// viewIn returns the view for T of cache c (the World's or a
// context's), made on first use.
func viewIn[T narma.Elem](w *World, c *cache) *view[T] {
	i := basicIndex[T]()
	if i >= 0 {
		if v := c.views[i]; v != nil {
			return v.(*view[T])
		}
	} else if v, ok := c.defined[reflect.TypeFor[T]()]; ok {
		return v.(*view[T])
	}
	win := narma.As[T](w.win)
	v := &view[T]{win: win, local: win.Local(), size: sizeOf[T]()}
	if i >= 0 {
		c.views[i] = v
	} else {
		if c.defined == nil {
			c.defined = make(map[reflect.Type]any)
		}
		c.defined[reflect.TypeFor[T]()] = v
	}
	return v
}

// basicIndex returns the index of T among the basic element types, or -1
// for a type defined on one of them.
func basicIndex[T narma.Elem]() int {
	var zero T
	switch any(zero).(type) {
	case int8:
		return 0
	case int16:
		return 1
	case int32:
		return 2
	case int64:
		return 3
	case uint8:
		return 4
	case uint16:
		return 5
	case uint32:
		return 6
	case uint64:
		return 7
	case float32:
		return 8
	case float64:
		return 9
	}
	return -1
}

// checkSpan reports whether the n bytes at off lie inside a live
// symmetric object: heap.Check, remembered in cache c until the next
// Free.
func (w *World) checkSpan(c *cache, off, n int) error {
	if g := w.gen.Load(); c.gen != g {
		c.valid, c.gen = [4]span{}, g
	}
	for _, s := range c.valid {
		if s.n > 0 && off >= s.off && off+n <= s.off+s.n {
			return nil
		}
	}
	if err := w.heap.Check(off, n); err != nil {
		return err
	}
	if n > 0 {
		c.valid[c.nextV] = span{off, n}
		c.nextV = (c.nextV + 1) % len(c.valid)
	}
	return nil
}

// forget makes every cache drop the spans it remembers, when an object
// is freed.
func (w *World) forget() { w.gen.Add(1) }

// okPE is ok for a call aimed at PE pe, which must be one of the job's
// (narma's null rank is not a PE).
func (w *World) okPE(op string, pe int) error {
	if err := w.ok(op); err != nil {
		return err
	}
	if pe < 0 || pe >= w.n {
		return w.opErr(op, narma.ErrRank, "PE %d not in [0, %d)", pe, w.n)
	}
	return nil
}
