package engine

import (
	"context"
	"encoding/binary"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// A dynamic window (MPI_Win_create_dynamic) has no memory of its own:
// each rank attaches buffers to it and detaches them when it likes,
// without the others, and hands out their addresses (DynAddr), which the
// program sends to the ranks that will access them. An origin resolves
// an address into a displacement once (Resolve): the displacement names
// an entry of the origin's table of resolved addresses in its high bits
// (dynShift) and counts the target's displacement units from the start
// of the attached buffer in its low bits, so that every data-movement
// call works on it unchanged, displacement plus k addressing element k.
//
// The target checks nothing itself: an address is the transport's key of
// the attached buffer's exposure, which the transport checks at every
// access as it checks a window's, and refuses once the buffer is
// detached; a forged or stale address writes nothing.

// dynShift is where a dynamic displacement's table entry begins: the low
// bits count displacement units within an attached buffer.
const dynShift = 40

// maxDynSlots bounds an origin's table of resolved addresses, so that a
// displacement stays below 2^63.
const maxDynSlots = 1<<(62-dynShift) - 1

// DynAddrSize is the length of an encoded DynAddr.
const DynAddrSize = 24 + transport.KeySize

// DynAddr is the address of a buffer attached to a dynamic window: the
// window, the rank that attached it (a rank of the window's
// communicator), the attachment's number there, its length in bytes and
// the transport's key of its exposure.
type DynAddr struct {
	Win  uint64
	Rank int
	ID   uint32
	Size int
	Key  transport.Key
}

// AppendBinary appends the address's encoding, DynAddrSize bytes, to b.
func (a DynAddr) AppendBinary(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, a.Win)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(a.Rank)))
	b = binary.LittleEndian.AppendUint32(b, a.ID)
	b = binary.LittleEndian.AppendUint64(b, uint64(a.Size))
	return append(b, a.Key[:]...)
}

// DecodeDynAddr decodes an address that AppendBinary encoded; ok is false
// if b has the wrong length or a negative rank or size.
func DecodeDynAddr(b []byte) (a DynAddr, ok bool) {
	if len(b) != DynAddrSize {
		return DynAddr{}, false
	}
	a.Win = binary.LittleEndian.Uint64(b[0:])
	a.Rank = int(int32(binary.LittleEndian.Uint32(b[8:])))
	a.ID = binary.LittleEndian.Uint32(b[12:])
	size := binary.LittleEndian.Uint64(b[16:])
	copy(a.Key[:], b[24:])
	if a.Rank < 0 || size > 1<<62 {
		return DynAddr{}, false
	}
	a.Size = int(size)
	return a, true
}

// dynState is a dynamic window's own state: its attachments, and the
// addresses it resolved as an origin. The window's owner only; the
// attachments are changed under the core's winsMu as well, which the key
// table of notices (publishKeys) reads them under.
type dynState struct {
	attached map[uint32]attachment
	nextID   uint32
	slots    []dynSlot
}

// attachment is a buffer attached to the window.
type attachment struct {
	buf []byte
	key transport.Key
}

// dynSlot is a resolved address: the target and its buffer's region.
type dynSlot struct {
	target int
	id     uint32
	key    transport.Key
	size   int
	reg    transport.Region
}

// CreateDynamic creates a window without memory, collectively, to which
// each rank attaches buffers (MPI_Win_create_dynamic).
func (c *Comm) CreateDynamic(ctx context.Context, opt WinOptions) (*Win, error) {
	return c.create(ctx, "CreateDynamic", mem.Alloc(0), true, opt, &dynState{attached: make(map[uint32]attachment)})
}

// checkDynamic checks that w is a live dynamic window.
func (w *Win) checkDynamic(op string) error {
	if err := w.check(op); err != nil {
		return err
	}
	if w.dyn == nil {
		return opErr(op, w.c.rank, ErrInvalidArgs, "not a dynamic window (CreateDynamic)")
	}
	return nil
}

// Attach exposes buf, memory of the library's allocator, through the
// dynamic window and returns its address (MPI_Win_attach). It is local:
// the other ranks learn the address from the program.
func (w *Win) Attach(buf []byte) (DynAddr, error) {
	if err := w.checkDynamic("Attach"); err != nil {
		return DynAddr{}, err
	}
	if len(buf) == 0 || !mem.Owns(buf) {
		return DynAddr{}, opErr("Attach", w.c.rank, ErrNotAlloc, "buffer at %#x of %d bytes", mem.Addr(buf), len(buf))
	}
	key, err := w.c.ep.Expose(buf)
	if err != nil {
		return DynAddr{}, opErr("Attach", w.c.rank, ErrInvalidArgs, "expose: %v", err)
	}
	d := w.dyn
	w.c.winsMu.Lock()
	d.nextID++
	d.attached[d.nextID] = attachment{buf: buf, key: key}
	w.c.publishKeys()
	w.c.winsMu.Unlock()
	return DynAddr{Win: w.id, Rank: w.c.rank, ID: d.nextID, Size: len(buf), Key: key}, nil
}

// Detach withdraws the buffer attached at a (MPI_Win_detach): accesses
// that reach it afterwards are refused, at their origin, and write
// nothing. The caller completes the accesses it expects first, as in MPI.
func (w *Win) Detach(a DynAddr) error {
	if err := w.checkDynamic("Detach"); err != nil {
		return err
	}
	at, ok := w.dyn.attached[a.ID]
	if a.Win != w.id || a.Rank != w.c.rank || !ok || at.key != a.Key {
		return opErr("Detach", w.c.rank, ErrInvalidArgs, "address %d of rank %d is not attached here", a.ID, a.Rank)
	}
	// Withdraw the exposure first, so that every access that reached the
	// buffer has its notice delivered while the key still names the
	// window; then forget the key.
	uerr := w.c.ep.Unexpose(at.key)
	w.c.winsMu.Lock()
	delete(w.dyn.attached, a.ID)
	w.c.publishKeys()
	w.c.winsMu.Unlock()
	if uerr != nil {
		return opErr("Detach", w.c.rank, ErrInvalidArgs, "unexpose: %v", uerr)
	}
	return nil
}

// detachAll withdraws every attached buffer (Free).
func (w *Win) detachAll() {
	if w.dyn == nil {
		return
	}
	w.c.winsMu.Lock()
	keys := make([]transport.Key, 0, len(w.dyn.attached))
	for id, at := range w.dyn.attached {
		keys = append(keys, at.key)
		delete(w.dyn.attached, id)
	}
	w.c.publishKeys()
	w.c.winsMu.Unlock()
	for _, k := range keys {
		_ = w.c.ep.Unexpose(k)
	}
}

// Resolve returns the displacement of the first byte of the buffer at a,
// in the target's displacement units, for the data-movement calls on the
// dynamic window: displacement plus k is unit k of the buffer. It is
// local. The first Resolve of an address checks it against the
// transport, which refuses a key it never made or has withdrawn; a later
// one returns the same displacement, and accesses through it fail if the
// buffer was detached since.
func (w *Win) Resolve(a DynAddr) (int, error) {
	if err := w.checkDynamic("Resolve"); err != nil {
		return 0, err
	}
	if a.Win != w.id {
		return 0, opErr("Resolve", w.c.rank, ErrInvalidArgs, "address of window %#x, not of this window (%#x)", a.Win, w.id)
	}
	if err := w.c.checkRank("Resolve", a.Rank); err != nil {
		return 0, err
	}
	d := w.dyn
	for i, s := range d.slots {
		if s.target == a.Rank && s.id == a.ID && s.key == a.Key && s.size == a.Size {
			return (i + 1) << dynShift, nil
		}
	}
	if len(d.slots) >= maxDynSlots {
		return 0, opErr("Resolve", w.c.rank, ErrInvalidArgs, "%d addresses resolved, the most a window holds", len(d.slots))
	}
	if a.Size/w.targets[a.Rank].unit >= 1<<dynShift {
		return 0, opErr("Resolve", w.c.rank, ErrBounds, "buffer of %d bytes", a.Size)
	}
	reg, err := w.c.ep.Region(w.c.jobRank(a.Rank), a.Key, a.Size)
	if err != nil {
		return 0, w.transportErr("Resolve", a.Rank, 0, err)
	}
	d.slots = append(d.slots, dynSlot{target: a.Rank, id: a.ID, key: a.Key, size: a.Size, reg: reg})
	return len(d.slots) << dynShift, nil
}

// dynTarget returns the region, its size and the displacement within it
// that a dynamic window's displacement disp names at target t.
func (w *Win) dynTarget(name string, t, disp int) (transport.Region, int, int, error) {
	i := disp>>dynShift - 1
	if disp < 0 || i < 0 || i >= len(w.dyn.slots) {
		return nil, 0, 0, opErr(name, w.c.rank, ErrBounds, "displacement %#x names no resolved address (Resolve)", disp)
	}
	s := w.dyn.slots[i]
	if s.target != t {
		return nil, 0, 0, opErr(name, w.c.rank, ErrBounds, "displacement %#x is an address of rank %d, not %d", disp, s.target, t)
	}
	return s.reg, s.size, disp & (1<<dynShift - 1), nil
}
