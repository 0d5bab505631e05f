//go:build amd64 && !race

package mem

//go:noescape
func storeRelease64(addr *uint64, v uint64)

//go:noescape
func storeRelease32(addr *uint32, v uint32)

//go:noescape
func storeFenced64(addr *uint64, v uint64)
