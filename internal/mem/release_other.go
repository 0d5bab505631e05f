//go:build !amd64 || race

package mem

import "sync/atomic"

// Elsewhere, and under the race detector (which must see the store as
// atomic), the release store is sync/atomic's: on arm64 a store-release
// instruction already.

func storeRelease64(addr *uint64, v uint64) { atomic.StoreUint64(addr, v) }

func storeRelease32(addr *uint32, v uint32) { atomic.StoreUint32(addr, v) }

func storeFenced64(addr *uint64, v uint64) { atomic.StoreUint64(addr, v) }
