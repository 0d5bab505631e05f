package mem

import "unsafe"

// PtrBytes returns the bytes of the variable p points to, without copying.
// The result aliases *p: it is how a single result value (FetchAndOp's
// *T) becomes a byte buffer a transport can fill.
func PtrBytes[T any](p *T) []byte {
	if p == nil {
		return nil
	}
	// Safe: p points to one live T of SizeOf[T]() bytes; the slice keeps
	// it alive and covers exactly it.
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}
