package engine

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/inproc"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/shm"
)

// signalCount counts what the signals of a job cost the transport: the
// signal notices its regions carried, and the wakes the engine asked for.
type signalCount struct {
	notices, counters, wakes atomic.Int64
	tags                     atomic.Int64 // tag notices of data operations
	// before, if set, runs at each data operation of rank origin on a
	// region before the transport performs it, with the region's memory
	// as mapped: what it sees there was written before the operation.
	before func(origin int, mapped []byte)
}

// signalRegion is a region that counts the signal notices it carries. It
// keeps the inner region's mapping (MappedRegion), so that the engine may
// set signals through it.
type signalRegion struct {
	transport.Region
	n      *signalCount
	origin int
}

func (r signalRegion) look() {
	if r.n.before != nil {
		if m, ok := r.Mapped(); ok {
			r.n.before(r.origin, m)
		}
	}
}

func (r signalRegion) count(n transport.Notice) {
	if n.Kind() == transport.NoticeSignal {
		r.n.notices.Add(1)
	}
}

// countData counts the counter notices of data operations (the window's
// control messages are counter notices without data, sendCtl).
func (r signalRegion) countData(n transport.Notice, bytes int) {
	if n.Kind() == transport.NoticeCounter && bytes > 0 {
		r.n.counters.Add(1)
	}
	if n.Kind() == transport.NoticeTag {
		r.n.tags.Add(1)
	}
}

func (r signalRegion) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	r.count(n)
	r.countData(n, len(src))
	r.look()
	return r.Region.Put(off, src, n, c)
}

func (r signalRegion) Get(off int, dst []byte, n transport.Notice, c *transport.Completion) error {
	r.count(n)
	r.countData(n, len(dst))
	r.look()
	return r.Region.Get(off, dst, n, c)
}

func (r signalRegion) Accumulate(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, c *transport.Completion) error {
	r.count(n)
	r.countData(n, 1)
	r.look()
	return r.Region.Accumulate(off, op, t, src, result, n, c)
}

func (r signalRegion) Mapped() ([]byte, bool) {
	if m, ok := r.Region.(transport.MappedRegion); ok {
		return m.Mapped()
	}
	return nil, false
}

// shmSignals is a shared-memory endpoint whose regions count signal
// notices and whose WakeRank counts wakes; everything else, Poller and
// Sleeper included, is the endpoint's own.
type shmSignals struct {
	*shm.Endpoint
	n *signalCount
}

func (e shmSignals) Region(target int, key transport.Key, size int) (transport.Region, error) {
	r, err := e.Endpoint.Region(target, key, size)
	return signalRegion{r, e.n, e.Rank()}, err
}

func (e shmSignals) WakeRank(rank int) {
	e.n.wakes.Add(1)
	e.Endpoint.WakeRank(rank)
}

// localSignals is the in-process transport, which is not a Waker, with
// regions that count signal notices.
type localSignals struct {
	transport.Endpoint
	n *signalCount
}

func (e localSignals) Region(target int, key transport.Key, size int) (transport.Region, error) {
	r, err := e.Endpoint.Region(target, key, size)
	return signalRegion{r, e.n, e.Rank()}, err
}

// TestSignalsSetDirectly: over shared memory an origin sets a signal word
// itself, through its mapping of the target's window, and wakes the
// target: no signal notice crosses the transport, one wake per signal;
// an operation larger than directMax sends its notice.
// Over a transport that is not a Waker the signals travel as notices.
// Either way the operation's data is in place when the target sees its
// signal (rule 1), for puts, gets and accumulates, from two origins at
// once, to a target that polls and to one asleep on its doorbell.
func TestSignalsSetDirectly(t *testing.T) {
	// The last round must be ended by the origins' wake, not by the
	// safety net of a sleep.
	defer func(d time.Duration) { sleepMax = d }(sleepMax)
	sleepMax = time.Hour
	for _, name := range []string{"shm", "local"} {
		t.Run(name, func(t *testing.T) {
			// Blocks as large as an origin sets signals for itself.
			const n, rounds, size = 3, 50, directMax
			var count signalCount
			cs := signalJob(t, name, n, &count)
			// Rank 1's window: a block of size bytes for each origin (0
			// and 2), then a signal word for each. Origins put a block
			// stamped with the round and add 1 to their signal; every
			// tenth round reads the target's block back with a get whose
			// signal sets the word instead, and every fifth adds with an
			// accumulate's signal.
			const target = 1
			sigOff := func(origin int) int { return 2*size + 8*(origin/2) }
			blockOff := func(origin int) int { return size * (origin / 2) }
			// Rule 1, whatever the timing: when an origin's operation
			// reaches the transport, its signal is not yet set.
			var round [n]atomic.Uint64
			var early atomic.Int64
			count.before = func(origin int, m []byte) {
				if len(m) == 2*size+16 && mem.AtomicLoad64(m[sigOff(origin):]) >= round[origin].Load() {
					early.Add(1)
				}
			}
			ws := make([]*Win, n)
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w, err := c.Allocate(ctx, 2*size+16, WinOptions{})
				ws[c.rank] = w
				if err != nil {
					return err
				}
				return w.LockAll(ctx, 0)
			})
			slow := make(chan struct{})
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w := ws[c.rank]
				if c.rank == target {
					for i := uint64(1); i <= rounds; i++ {
						start := time.Now()
						if i == rounds {
							close(slow) // the origins wait until this rank sleeps
						}
						for _, o := range []int{0, 2} {
							if _, err := w.WaitSignal(ctx, sigOff(o), CmpGE, i); err != nil {
								return err
							}
							want := bytes.Repeat([]byte{byte(i + uint64(o))}, size)
							if got := w.mem[blockOff(o):][:size]; !bytes.Equal(got, want) {
								return fmt.Errorf("round %d: signal of rank %d seen before its data", i, o)
							}
						}
						// The origins sleep 20 ms before the last round's
						// signals, then 500 ms before its barrier, whose
						// message would wake this rank too.
						if d := time.Since(start); i == rounds && d > 300*time.Millisecond {
							return fmt.Errorf("asleep on its doorbell, this rank saw the signals after %v: not woken by them", d)
						}
						// The origins wait for this before their next round.
						if err := c.Barrier(ctx); err != nil {
							return err
						}
					}
					return nil
				}
				block := make([]byte, size)
				sig := sigOff(c.rank)
				for i := uint64(1); i <= rounds; i++ {
					if i == rounds {
						<-slow
						time.Sleep(20 * time.Millisecond) // the target sleeps by now
					}
					for k := range block {
						block[k] = byte(i + uint64(c.rank))
					}
					round[c.rank].Store(i)
					var err error
					switch {
					case i%10 == 0:
						// Put the block, then read it back with a get
						// whose signal sets the word.
						if err = w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: block, Target: target, Disp: blockOff(c.rank)}); err == nil {
							back := make([]byte, size)
							err = w.Do(&Access{Kind: KindGet, Type: mem.Uint8, Origin: back, Target: target, Disp: blockOff(c.rank), Notice: SignalNotice(SignalSet, uint64(sig), i)})
						}
					case i%5 == 0:
						// Put all but the last byte, then accumulate
						// (replace) it with the signal.
						if err = w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: block[:size-1], Target: target, Disp: blockOff(c.rank)}); err == nil {
							err = w.Do(&Access{Kind: KindAccumulate, Op: mem.Replace, Type: mem.Uint8, Origin: block[size-1:], Target: target, Disp: blockOff(c.rank) + size - 1, Notice: SignalNotice(SignalAdd, uint64(sig), 1)})
						}
					default:
						err = w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: block, Target: target, Disp: blockOff(c.rank), Notice: SignalNotice(SignalAdd, uint64(sig), 1)})
					}
					if err != nil {
						return err
					}
					if err := w.Flush(ctx, target); err != nil {
						return err
					}
					if i == rounds {
						time.Sleep(500 * time.Millisecond)
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
				}
				return nil
			})
			if k := early.Load(); k > 0 {
				t.Errorf("%d operations reached the transport after their signal was set", k)
			}
			count.before = nil
			signals := int64(2 * rounds)
			if name == "shm" {
				if got := count.notices.Load(); got != 0 {
					t.Errorf("%d signal notices crossed the transport, want none", got)
				}
				if got := count.wakes.Load(); got != signals {
					t.Errorf("%d wakes, want one per signal, %d", got, signals)
				}
			} else if got := count.notices.Load(); got != signals {
				t.Errorf("%d signal notices, want %d", got, signals)
			}
			// A put larger than directMax sends its signal as a notice.
			before := count.notices.Load()
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w := ws[c.rank]
				if c.rank == target {
					for _, o := range []int{0, 2} {
						if _, err := w.WaitSignal(ctx, sigOff(o), CmpGE, rounds+1); err != nil {
							return err
						}
					}
					return nil
				}
				big := make([]byte, directMax+8)
				if err := w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: big, Target: target, Disp: 0, Notice: SignalNotice(SignalAdd, uint64(sigOff(c.rank)), 1)}); err != nil {
					return err
				}
				return w.Flush(ctx, target)
			})
			if got := count.notices.Load() - before; got != 2 {
				t.Errorf("puts of %d bytes sent %d signal notices, want 2", directMax+8, got)
			}
		})
	}
}

// signalJob builds n communicators over shm or the in-process transport
// (name), whose signals and counters count.
func signalJob(t *testing.T, name string, n int, count *signalCount) []*Comm {
	return wrappedJob(t, name, n,
		func(ep *shm.Endpoint) transport.Endpoint { return shmSignals{ep, count} },
		func(ep transport.Endpoint) transport.Endpoint { return localSignals{ep, count} })
}

// wrappedJob builds n communicators over shm (name "shm") or the
// in-process transport, each endpoint wrapped by onShm or onLocal, and
// closes them when the test ends.
func wrappedJob(t *testing.T, name string, n int, onShm func(*shm.Endpoint) transport.Endpoint, onLocal func(transport.Endpoint) transport.Endpoint) []*Comm {
	cs := make([]*Comm, n)
	if name == "shm" {
		t.Setenv("NARMA_TRANSPORT", "shm")
		eps, err := inproc.New(n)
		if err != nil {
			t.Fatal(err)
		}
		for r, ep := range eps {
			cs[r] = New(onShm(ep.(*shm.Endpoint)), nil, nil)
		}
	} else {
		eps, err := local.New(n)
		if err != nil {
			t.Fatal(err)
		}
		for r, ep := range eps {
			cs[r] = New(onLocal(ep), nil, nil)
		}
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// TestCountersSetDirectly: over shared memory an origin adds to a
// notification counter itself, through its mapping of the target's
// counters, for puts (the fast path), gets and accumulates; no counter
// notice with data crosses the transport, one wake per notice. The data
// is in place when the target sees its count (rule 1). SetCounters in the
// middle, growing the target's counters, carries the counts over, and the
// origins then add to the new ones. Over the in-process transport the
// counters travel as notices.
func TestCountersSetDirectly(t *testing.T) {
	for _, name := range []string{"shm", "local"} {
		t.Run(name, func(t *testing.T) {
			const n, rounds, size, target = 3, 40, directMax, 1
			var count signalCount
			cs := signalJob(t, name, n, &count)
			blockOff := func(origin int) int { return size * (origin / 2) }
			ws := make([]*Win, n)
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w, err := c.Allocate(ctx, 2*size, WinOptions{})
				ws[c.rank] = w
				if err != nil {
					return err
				}
				k := 0
				if c.rank == target {
					k = 2
				}
				if err := w.SetCounters(ctx, k); err != nil {
					return err
				}
				return w.LockAll(ctx, 0)
			})
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				w := ws[c.rank]
				block := make([]byte, size)
				for i := uint64(1); i <= rounds; i++ {
					if i == rounds/2 {
						// Grow rank 1's counters to 3, collectively.
						if err := w.UnlockAll(ctx); err != nil {
							return err
						}
						k := 0
						if c.rank == target {
							k = 3
						}
						if err := w.SetCounters(ctx, k); err != nil {
							return err
						}
						if err := w.LockAll(ctx, 0); err != nil {
							return err
						}
					}
					if c.rank == target {
						for _, o := range []int{0, 2} {
							if err := w.WaitCounter(ctx, o/2, i); err != nil {
								return err
							}
							want := bytes.Repeat([]byte{byte(i + uint64(o))}, size)
							if got := w.mem[blockOff(o):][:size]; !bytes.Equal(got, want) {
								return fmt.Errorf("round %d: count of rank %d seen before its data", i, o)
							}
						}
					} else {
						for k := range block {
							block[k] = byte(i + uint64(c.rank))
						}
						nt := TagNotice(NoticeCounter, int32(c.rank/2))
						var err error
						switch {
						case i%10 == 0:
							if err = w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: block, Target: target, Disp: blockOff(c.rank)}); err == nil {
								back := make([]byte, size)
								err = w.Do(&Access{Kind: KindGet, Type: mem.Uint8, Origin: back, Target: target, Disp: blockOff(c.rank), Notice: nt})
							}
						case i%5 == 0:
							if err = w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: block[:size-1], Target: target, Disp: blockOff(c.rank)}); err == nil {
								err = w.Do(&Access{Kind: KindAccumulate, Op: mem.Replace, Type: mem.Uint8, Origin: block[size-1:], Target: target, Disp: blockOff(c.rank) + size - 1, Notice: nt})
							}
						default:
							err = w.Do(&Access{Kind: KindPut, Type: mem.Uint8, Origin: block, Target: target, Disp: blockOff(c.rank), Notice: nt})
						}
						if err != nil {
							return err
						}
						if err := w.Flush(ctx, target); err != nil {
							return err
						}
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
				}
				if c.rank == target {
					for i := range 2 {
						if v, err := w.Counter(i); err != nil || v != rounds {
							return fmt.Errorf("counter %d = %d, %v; want %d", i, v, err, rounds)
						}
					}
				}
				return w.UnlockAll(ctx)
			})
			notices := int64(2 * rounds)
			if name == "shm" {
				if got := count.counters.Load(); got != 0 {
					t.Errorf("%d counter notices with data crossed the transport, want none", got)
				}
				if got := count.wakes.Load(); got != notices {
					t.Errorf("%d wakes, want one per notice, %d", got, notices)
				}
			} else if got := count.counters.Load(); got != notices {
				t.Errorf("%d counter notices, want %d", got, notices)
			}
			runOK(t, cs, func(ctx context.Context, c *Comm) error { return ws[c.rank].Free(ctx) })
		})
	}
}
