package mem

// StoreRelease64 stores v at *addr with release ordering: every load and
// store the caller made before it is visible to another core, or another
// process sharing the memory, before v is. It is cheaper than
// atomic.StoreUint64, a sequentially consistent store that on amd64 is a
// locked exchange waiting for the store buffer to drain, and it gives
// less: a load the caller makes after it may be satisfied before v is
// visible elsewhere (store-load reordering), so it must not stand in for
// the store of a Dekker-style handshake (publish, then look whether
// someone sleeps). Readers use atomic.LoadUint64.
func StoreRelease64(addr *uint64, v uint64) { storeRelease64(addr, v) }

// StoreRelease32 is StoreRelease64 for a 32-bit word.
func StoreRelease32(addr *uint32, v uint32) { storeRelease32(addr, v) }

// StoreFenced64 stores v at *addr and then waits until the store is
// visible to every other core before the caller's next load: a
// sequentially consistent store, as atomic.StoreUint64, fit for the store
// of a Dekker-style handshake. On amd64 it is a plain store followed by
// a locked instruction on the caller's own stack, rather than
// sync/atomic's exchange on addr: when another core spins reading addr's
// line, the exchange, which must own the line for the whole of a
// read-modify-write, costs a third more of a handoff between cores than
// the plain store does, and the fence on a private line adds nothing the
// other core waits for.
func StoreFenced64(addr *uint64, v uint64) { storeFenced64(addr, v) }
