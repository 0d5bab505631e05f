//go:build fabric

package fabric

import (
	"fmt"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Native atomics. An endpoint applies its atomics either all through
// libfabric (fi_atomic, fi_fetch_atomic, fi_compare_atomic: the NIC, or
// the provider at the target) or all in software at the target (a message
// that the target's progress applies with the CPU's atomics). Never both:
// a NIC's atomics are not atomic with respect to the CPU's, so a window
// that saw both could lose updates. The choice is the endpoint's, made
// at open: native if the provider applies every operation on every
// element type the transport contract names, and the caller did not ask
// for software (Config.SoftwareAtomics). Every rank of a job must choose
// alike; the address exchange carries the choice and connect refuses a
// job that mixes them.
//
// With native atomics the endpoint's own regions take them through
// libfabric too (the provider at this rank applies them), and so do its
// other operations on its own regions, so that their notices come after
// the atomics issued before them, in the one order of the peer queue.

// atomicModes are the choices, as the address exchange carries them.
const (
	atomicsSoftware byte = 's'
	atomicsNative   byte = 'n'
)

// atomicModeName says what a mode byte stands for.
func atomicModeName(m byte) string {
	switch m {
	case atomicsNative:
		return "natively"
	case atomicsSoftware:
		return "in software"
	}
	return fmt.Sprintf("by unknown mode %q", m)
}

// atomicLimits holds, for a native endpoint, how many elements one
// libfabric atomic takes at most, by kind, operation and element type.
type atomicLimits [3][mem.NoOp + 1][mem.Float64 + 1]int

// queryAtomics returns the limits if the provider applies everything
// natively, else nil.
func queryAtomics(l *lib) *atomicLimits {
	lim := new(atomicLimits)
	for t := mem.Int8; t <= mem.Float64; t++ {
		for op := mem.Sum; op <= mem.NoOp; op++ {
			if !op.ValidFor(t) {
				continue
			}
			kinds := []int{atomicWrite, atomicFetch}
			if op == mem.NoOp {
				kinds = kinds[1:] // NoOp only fetches
			}
			for _, k := range kinds {
				n, ok := l.atomicValid(k, fiOp(op), fiType(t, bitsOnly(op)))
				if !ok {
					return nil
				}
				lim[k][op][t] = n
			}
		}
		n, ok := l.atomicValid(atomicCompare, fiCSwap, fiType(t, true))
		if !ok {
			return nil
		}
		lim[atomicCompare][0][t] = n
	}
	return lim
}

// bitsOnly reports whether op only moves bits, so that floating-point
// elements go as integers of their size.
func bitsOnly(op mem.Op) bool { return op == mem.Replace || op == mem.NoOp }

// Native reports whether the endpoint applies atomics through libfabric
// (else in software at the target).
func (e *Endpoint) Native() bool { return e.limits != nil }

// withdrawn returns ErrNoRegion if r is this endpoint's own region and
// was withdrawn (a peer's withdrawal stops the handle itself), before an
// operation goes to it through libfabric.
func (r *region) withdrawn() error {
	x := r.self
	if x == nil {
		return nil
	}
	x.mu.RLock()
	dead := x.dead
	x.mu.RUnlock()
	if dead {
		return fmt.Errorf("fabric: key %v: %w", r.key, transport.ErrNoRegion)
	}
	return nil
}

// nativeAccumulate issues an accumulate as native atomics: one, or
// several of at most the provider's count each (every element still
// atomic), the notice following them.
func (r *region) nativeAccumulate(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, c *transport.Completion) error {
	e := r.ep
	if err := r.withdrawn(); err != nil {
		return err
	}
	p := r.p
	size := t.Size()
	total := len(src)
	if op == mem.NoOp {
		total = len(result) // 0 without a result: nothing to read
		src = nil
	}
	kind, cl := atomicWrite, classAW
	if result != nil {
		kind = atomicFetch
	}
	if op == mem.NoOp {
		cl = classAR
	}
	per := msgBufSize / size
	if kind == atomicFetch {
		per /= 2 // the source and the result share the bounce buffer
	}
	per = min(per, e.limits[kind][op][t])
	fop, fdt := fiOp(op), fiType(t, bitsOnly(op))
	for done := 0; done < total; done += per * size {
		end := min(done+per*size, total)
		o := e.ops.add(p, cl, c, 1)
		o.addr, o.key = r.addr+uint64(off+done), r.mrKey
		o.akind, o.aop, o.adt, o.count = kind, fop, fdt, (end-done)/size
		// Through a C buffer, never injected (lib.atomic).
		if err := e.bounce(o); err != nil {
			return err
		}
		if kind == atomicWrite {
			o.data = o.buf.b[:copy(o.buf.b, src[done:end])]
		} else {
			k := end - done
			o.out, o.dst = o.buf.b[k:2*k], result[done:end]
			o.data = o.out // NoOp: libfabric reads the count only
			if src != nil {
				o.data = o.buf.b[:copy(o.buf.b, src[done:end])]
			}
		}
		if err := e.start(p, o, true); err != nil {
			return err
		}
	}
	if n.Kind() == transport.NoticeNone {
		return nil
	}
	return r.notice(n, c)
}

// nativeCompareSwap issues a compare-and-swap as one native atomic.
func (r *region) nativeCompareSwap(off int, t mem.Type, compare, swap, result []byte, n transport.Notice, c *transport.Completion) error {
	e := r.ep
	if err := r.withdrawn(); err != nil {
		return err
	}
	p := r.p
	size := t.Size()
	o := e.ops.add(p, classAW, c, 1)
	o.addr, o.key = r.addr+uint64(off), r.mrKey
	o.akind, o.aop, o.adt, o.count = atomicCompare, fiCSwap, fiType(t, true), 1
	if err := e.bounce(o); err != nil {
		return err
	}
	o.data = o.buf.b[:copy(o.buf.b, swap[:size])]
	o.cmp = o.buf.b[8 : 8+copy(o.buf.b[8:], compare[:size])]
	o.out = o.buf.b[16 : 16+size] // libfabric always returns the old value
	if result != nil {
		o.dst = result[:size]
	}
	if err := e.start(p, o, true); err != nil {
		return err
	}
	if n.Kind() == transport.NoticeNone {
		return nil
	}
	return r.notice(n, c)
}

// errMixedAtomics is a native endpoint's answer to a software atomic,
// which only a confused peer sends (connect refuses a job that mixes
// them).
var errMixedAtomics = fmt.Errorf("fabric: a software atomic at an endpoint with native atomics: %w", mem.ErrOp)
