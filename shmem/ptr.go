package shmem

import "github.com/narma-rma/narma"

// Ptr returns PE pe's copy of s as a slice of this process's memory, for
// direct loads and stores (shmem_ptr): PE pe's part of the symmetric heap
// where the transport maps it into this process (goroutine PEs; processes
// of one host over shm or hybrid), else nil, as it is for an invalid s or
// pe. The PEs for which it is not nil are those of TeamShared.
//
// Loads and stores through it are plain memory accesses, outside the
// heap's puts and atomics, and follow Go's memory model: order a store
// on one PE and a load on another by a synchronization between them
// (BarrierAll, a signal, a WaitUntil on a flag set after the stores), or
// use sync/atomic on the elements. Like Local, it is made on the World's
// goroutine, and the slice must not be used after s is freed.
func Ptr[T narma.Elem](w *World, s Sym[T], pe int) []T {
	if w.okPE("Ptr", pe) != nil || s.check(w, "Ptr") != nil {
		return nil
	}
	v := viewOf[T](w)
	peer, err := v.win.SharedQuery(pe)
	if err != nil {
		return nil
	}
	i := s.off / v.size
	return peer[i : i+s.n : i+s.n]
}
