//go:build fabric

package fabric

/*
#cgo LDFLAGS: -lfabric
#include <stdlib.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_atomic.h>
#include "nf.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/narma-rma/narma/internal/mem"
)

// This file is the only one that speaks C: the rest of the package sees
// a lib, numbers for operation contexts and memory registrations, and
// C buffers as byte slices it must not keep past their free.

// lib is one libfabric endpoint with its fabric, domain, address vector
// and completion queue.
type lib struct {
	p *C.nf_ep
}

// attr is what the provider granted.
type attr struct {
	prov, fabric, domain string
	mrMode               uint64
	msgOrder             uint64
	cqDataSize           int
	injectSize           int
	maxMsgSize           uint64
	addrLen              int
	waitFD               int
	delivery             bool // completions mean delivered at the target
}

// libfabric constants the Go side needs.
const (
	mrVirtAddr = uint64(C.FI_MR_VIRT_ADDR)
	mrLocal    = uint64(C.FI_MR_LOCAL)

	flagRemoteCQData = uint64(C.FI_REMOTE_CQ_DATA)

	errAgain = -int(C.FI_EAGAIN)
)

// Orders of operations the provider keeps (msg_order), by what comes
// after what.
const (
	orderRAR = uint64(C.FI_ORDER_RAR)
	orderRAW = uint64(C.FI_ORDER_RAW)
	orderRAS = uint64(C.FI_ORDER_RAS)
	orderWAR = uint64(C.FI_ORDER_WAR)
	orderWAW = uint64(C.FI_ORDER_WAW)
	orderWAS = uint64(C.FI_ORDER_WAS)
	orderSAR = uint64(C.FI_ORDER_SAR)
	orderSAW = uint64(C.FI_ORDER_SAW)
	orderSAS = uint64(C.FI_ORDER_SAS)

	orderAtomicRAR = uint64(C.FI_ORDER_ATOMIC_RAR)
	orderAtomicRAW = uint64(C.FI_ORDER_ATOMIC_RAW)
	orderAtomicWAR = uint64(C.FI_ORDER_ATOMIC_WAR)
	orderAtomicWAW = uint64(C.FI_ORDER_ATOMIC_WAW)
)

// atomicOrders gives for each of libfabric's orders of RMA and atomic
// operations together the order of atomics alone, which it implies.
var atomicOrders = [][2]uint64{
	{orderRAR, orderAtomicRAR}, {orderRAW, orderAtomicRAW}, {orderWAR, orderAtomicWAR}, {orderWAW, orderAtomicWAW},
}

// rmaOrders gives for each of libfabric's orders of RMA operations alone
// (libfabric 1.16 and later, which some providers report instead) the
// order of RMA and atomics together whose part between RMA operations it
// is: orderBits asks the latter only of RMA operations.
var rmaOrders = [][2]uint64{
	{uint64(C.FI_ORDER_RMA_RAR), orderRAR}, {uint64(C.FI_ORDER_RMA_RAW), orderRAW},
	{uint64(C.FI_ORDER_RMA_WAR), orderWAR}, {uint64(C.FI_ORDER_RMA_WAW), orderWAW},
}

// withImpliedOrders adds to msg_order the orders of atomics alone that
// its orders of RMA and atomics together imply, then stands its orders
// of RMA alone for those of RMA and atomics together, as orderBits asks
// them of RMA operations only (the atomics' orders were derived first).
func withImpliedOrders(order uint64) uint64 {
	for _, o := range atomicOrders {
		if order&o[0] != 0 {
			order |= o[1]
		}
	}
	for _, o := range rmaOrders {
		if order&o[0] != 0 {
			order |= o[1]
		}
	}
	return order
}

// libError is a libfabric error code with the call that returned it.
type libError struct {
	call string
	code int // negative
}

func (e *libError) Error() string {
	return fmt.Sprintf("%s: %s", e.call, C.GoString(C.nf_strerror(C.int(e.code))))
}

// strerror returns libfabric's text for err (either sign).
func strerror(err int) string { return C.GoString(C.nf_strerror(C.int(err))) }

// openLib opens an endpoint of provider prov ("" for any), on the local
// address node and the domain named domain when they are not empty; with
// delivery, one whose operations complete once delivered if the provider
// has that.
func openLib(prov, node, domain string, delivery bool) (*lib, attr, error) {
	cs := func(s string) *C.char {
		if s == "" {
			return nil
		}
		return C.CString(s)
	}
	cp, cn, cd := cs(prov), cs(node), cs(domain)
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(cd))
	var p *C.nf_ep
	var a C.nf_attr
	var msg [256]C.char
	if ret := C.nf_open(cp, cn, cd, cbool(delivery), &p, &a, &msg[0], C.size_t(len(msg))); ret != 0 {
		return nil, attr{}, fmt.Errorf("libfabric: %s", C.GoString(&msg[0]))
	}
	return &lib{p: p}, attr{
		prov:       C.GoString(&a.prov[0]),
		fabric:     C.GoString(&a.fabric[0]),
		domain:     C.GoString(&a.domain[0]),
		mrMode:     uint64(a.mr_mode),
		msgOrder:   withImpliedOrders(uint64(a.msg_order)),
		cqDataSize: int(a.cq_data_size),
		injectSize: int(a.inject_size),
		maxMsgSize: uint64(a.max_msg_size),
		addrLen:    int(a.addrlen),
		waitFD:     int(a.wait_fd),
		delivery:   a.delivery != 0,
	}, nil
}

// shut closes the libfabric endpoint: libfabric holds none of the
// caller's buffers after it, and local registrations may be closed.
func (l *lib) shut() { C.nf_shut(l.p) }

// close releases the endpoint and its domain; every registration must
// be closed before.
func (l *lib) close() { C.nf_close(l.p) }

// name returns the endpoint's address, for the peers' address vectors.
func (l *lib) name(n int) ([]byte, error) {
	buf := C.malloc(C.size_t(max(n, 1)))
	defer C.free(buf)
	size := C.size_t(n)
	if ret := C.nf_getname(l.p, buf, &size); ret != 0 {
		return nil, &libError{"fi_getname", int(ret)}
	}
	return C.GoBytes(buf, C.int(size)), nil
}

// insert fills the address vector with the ranks' addresses, each of
// length n, in rank order.
func (l *lib) insert(names [][]byte, n int) error {
	all := C.malloc(C.size_t(max(len(names)*n, 1)))
	defer C.free(all)
	dst := unsafe.Slice((*byte)(all), len(names)*n)
	for i, a := range names {
		if len(a) != n {
			return fmt.Errorf("libfabric: address of rank %d has %d bytes, want %d", i, len(a), n)
		}
		copy(dst[i*n:], a)
	}
	if ret := C.nf_av_insert(l.p, all, C.size_t(len(names))); ret != 0 {
		return &libError{"fi_av_insert", int(ret)}
	}
	return nil
}

// register registers b for remote reads and writes and returns the
// registration and its remote key. b must stay where it is until the
// registration is closed (the caller pins it).
func (l *lib) register(b []byte, reqKey uint64) (mr, key uint64, err error) {
	mr, key, _, err = l.reg(b, true, reqKey)
	return mr, key, err
}

// registerLocal registers b as the source or destination of operations,
// for providers that need it (FI_MR_LOCAL), and returns the registration
// and its local descriptor. b must stay where it is until the
// registration is closed.
func (l *lib) registerLocal(b []byte, reqKey uint64) (mr, desc uint64, err error) {
	mr, _, desc, err = l.reg(b, false, reqKey)
	return mr, desc, err
}

func (l *lib) reg(b []byte, remote bool, reqKey uint64) (mr, key, desc uint64, err error) {
	var m, k, d C.uint64_t
	if ret := C.nf_mr_reg(l.p, unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b)), cbool(remote), C.uint64_t(reqKey), &m, &k, &d); ret != 0 {
		return 0, 0, 0, &libError{"fi_mr_reg", int(ret)}
	}
	return uint64(m), uint64(k), uint64(d), nil
}

// deregister closes a registration.
func deregister(mr uint64) error {
	if ret := C.nf_mr_close(C.uint64_t(mr)); ret != 0 {
		return &libError{"fi_close(mr)", int(ret)}
	}
	return nil
}

// addrOf returns the address of b's first byte, as a target's registered
// memory is named with FI_MR_VIRT_ADDR.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// ptr returns b's data pointer for C; nil for an empty b.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// The data movers below take, with each local buffer, the descriptor of
// its registration (desc), 0 where the provider needs none.

// write issues an RMA write of src to (addr, key) at rank dest, with
// remote CQ data if withData. With inject the source is consumed before
// the call returns; otherwise the caller keeps src pinned and unchanged
// until the completion of ctx. The write completes once delivered if
// delivery and the provider grants it (attr.delivery), else once sent.
func (l *lib) write(src []byte, desc uint64, dest int, addr, key, data uint64, withData, inject, delivery bool, ctx uint64) int {
	return int(C.nf_write(l.p, ptr(src), C.uint64_t(desc), C.size_t(len(src)), C.uint64_t(dest), C.uint64_t(addr), C.uint64_t(key),
		C.uint64_t(data), cbool(withData), cbool(inject), cbool(delivery), C.uint64_t(ctx)))
}

// read issues an RMA read into dst, which the caller keeps pinned until
// the completion of ctx.
func (l *lib) read(dst []byte, desc uint64, dest int, addr, key uint64, ctx uint64) int {
	return int(C.nf_read(l.p, ptr(dst), C.uint64_t(desc), C.size_t(len(dst)), C.uint64_t(dest), C.uint64_t(addr), C.uint64_t(key), C.uint64_t(ctx)))
}

// send sends buf, a C buffer (cbuf) that stays allocated until the
// completion of ctx, or any buffer if inject.
func (l *lib) send(buf []byte, desc uint64, dest int, inject bool, ctx uint64) int {
	return int(C.nf_send(l.p, ptr(buf), C.uint64_t(desc), C.size_t(len(buf)), C.uint64_t(dest), cbool(inject), C.uint64_t(ctx)))
}

// recv posts buf, a C buffer, for one incoming message.
func (l *lib) recv(buf []byte, desc uint64, ctx uint64) int {
	return int(C.nf_recv(l.p, ptr(buf), C.uint64_t(desc), C.size_t(len(buf)), C.uint64_t(ctx)))
}

// Kinds of atomics.
const (
	atomicWrite   = int(C.NF_ATOMIC_WRITE)   // applied
	atomicFetch   = int(C.NF_ATOMIC_FETCH)   // applied, the previous contents returned
	atomicCompare = int(C.NF_ATOMIC_COMPARE) // compare-and-swap
)

// fiOps maps the operations onto libfabric's: Replace writes, NoOp reads
// (fetching only).
var fiOps = [...]C.enum_fi_op{
	mem.Sum: C.FI_SUM, mem.Prod: C.FI_PROD, mem.Min: C.FI_MIN, mem.Max: C.FI_MAX,
	mem.Band: C.FI_BAND, mem.Bor: C.FI_BOR, mem.Bxor: C.FI_BXOR,
	mem.Replace: C.FI_ATOMIC_WRITE, mem.NoOp: C.FI_ATOMIC_READ,
}

// fiCSwap is libfabric's compare-and-swap.
const fiCSwap = int(C.FI_CSWAP)

// fiTypes maps the element types onto libfabric's.
var fiTypes = [...]C.enum_fi_datatype{
	mem.Int8: C.FI_INT8, mem.Int16: C.FI_INT16, mem.Int32: C.FI_INT32, mem.Int64: C.FI_INT64,
	mem.Uint8: C.FI_UINT8, mem.Uint16: C.FI_UINT16, mem.Uint32: C.FI_UINT32, mem.Uint64: C.FI_UINT64,
	mem.Float32: C.FI_FLOAT, mem.Float64: C.FI_DOUBLE,
}

// fiOp returns libfabric's operation for op.
func fiOp(op mem.Op) int { return int(fiOps[op]) }

// fiType returns libfabric's datatype for t; with bits, for operations
// that only move or compare bits (Replace, NoOp, compare-and-swap), the
// unsigned integer of t's size, so that floating-point elements compare
// bit for bit, as package mem does (-0 is not 0, a NaN equals itself).
func fiType(t mem.Type, bits bool) int {
	if bits && t.IsFloat() {
		if t.Size() == 4 {
			return int(C.FI_UINT32)
		}
		return int(C.FI_UINT64)
	}
	return int(fiTypes[t])
}

// atomicValid reports whether the provider applies atomics of kind with
// libfabric operation op on datatype dt, and on how many elements at
// most in one operation.
func (l *lib) atomicValid(kind, op, dt int) (count int, ok bool) {
	var n C.size_t
	if C.nf_atomic_valid(l.p, C.int(kind), C.int(op), C.int(dt), &n) != 0 || n == 0 {
		return 0, false
	}
	return int(n), true
}

// atomic issues an atomic of kind on count elements at (addr, key) of
// rank dest. src, compare and result are C buffers of one registration
// (desc) that stay allocated until the completion of ctx; compare and
// result may be nil where kind takes none. (Never injected: tcp;ofi_rxm reports no completion for an
// injected atomic.)
func (l *lib) atomic(kind, op, dt int, src, compare, result []byte, desc uint64, count, dest int, addr, key uint64, ctx uint64) int {
	return int(C.nf_atomic(l.p, C.int(kind), C.int(op), C.int(dt), ptr(src), ptr(compare), ptr(result), C.uint64_t(desc), C.size_t(count),
		C.uint64_t(dest), C.uint64_t(addr), C.uint64_t(key), C.uint64_t(ctx)))
}

// comp is one completion (nf_comp).
type comp = C.nf_comp

// compBatch is how many completions one poll reads at most.
const compBatch = 16

// poll reads up to len(out) completions into out and returns how many,
// or a negative libfabric error.
func (l *lib) poll(out *[compBatch]comp) int {
	return int(C.nf_poll(l.p, &out[0], compBatch))
}

// trywait reports whether the caller may block on the wait descriptor.
func (l *lib) trywait() bool { return C.nf_trywait(l.p) == 0 }

// Accessors of a completion.
func compCtx(c *comp) uint64   { return uint64(c.ctx) }
func compFlags(c *comp) uint64 { return uint64(c.flags) }
func compLen(c *comp) int      { return int(c.len) }
func compData(c *comp) uint64  { return uint64(c.data) }
func compErr(c *comp) (int, int) {
	return int(c.err), int(c.prov_errno)
}

// cbuf is a buffer in C memory, which libfabric may keep while an
// operation is in flight and the Go collector never moves; mr and desc
// are its local registration, if the endpoint registers buffers.
type cbuf struct {
	p        unsafe.Pointer
	b        []byte
	mr, desc uint64
}

// newCbuf allocates n bytes of C memory.
func newCbuf(n int) cbuf {
	p := C.malloc(C.size_t(max(n, 1)))
	if p == nil {
		panic("fabric: out of C memory")
	}
	return cbuf{p: p, b: unsafe.Slice((*byte)(p), n)}
}

// free releases the buffer and closes its registration.
func (c cbuf) free() {
	if c.mr != 0 {
		_ = deregister(c.mr)
	}
	if c.p != nil {
		C.free(c.p)
	}
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// pin keeps b's memory in place (it may be Go memory) until p.Unpin.
func pin(p *runtime.Pinner, b []byte) {
	if len(b) > 0 {
		p.Pin(unsafe.SliceData(b))
	}
}
