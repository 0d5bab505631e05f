package mem

import (
	"errors"
	"unsafe"
)

// ErrAlign is returned when memory is not suitably aligned for its element
// type, when a length is not a whole number of elements in a view, or when
// a sub-word atomic would need bytes beyond the slice's capacity.
var ErrAlign = errors.New("mem: misaligned memory")

// SizeOf returns the size in bytes of a value of type T.
func SizeOf[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// Addr returns the address of the first byte of b, or 0 if b is empty.
func Addr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// Bytes returns the memory of s as bytes without copying: the result has
// length len(s)*SizeOf[T]() and capacity cap(s)*SizeOf[T](), and aliases s.
// It returns nil when s is empty or T has size zero.
func Bytes[T any](s []T) []byte {
	size := SizeOf[T]()
	if len(s) == 0 || size == 0 {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), cap(s)*size)
	return b[:len(s)*size]
}

// Slice returns the memory of b as a []T without copying: the result has
// length len(b)/SizeOf[T]() and capacity cap(b)/SizeOf[T](), and aliases b.
// It returns ErrAlign if b's first byte is not aligned for T, if len(b) is
// not a multiple of the size of T, or if T has size zero. An empty b yields
// a nil slice and no error.
func Slice[T any](b []byte) ([]T, error) {
	var z T
	size := int(unsafe.Sizeof(z))
	if size == 0 {
		return nil, ErrAlign
	}
	if len(b) == 0 {
		return nil, nil
	}
	if len(b)%size != 0 || Addr(b)%unsafe.Alignof(z) != 0 {
		return nil, ErrAlign
	}
	s := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/size)
	return s[:len(b)/size], nil
}

// As returns the memory at the start of b as a *T without copying, for
// typed views of memory laid out by hand (a shared segment's header). It
// returns ErrAlign if b is shorter than a T or its first byte is not
// aligned for T.
func As[T any](b []byte) (*T, error) {
	var z T
	if len(b) < int(unsafe.Sizeof(z)) || len(b) == 0 || Addr(b)%unsafe.Alignof(z) != 0 {
		return nil, ErrAlign
	}
	return (*T)(unsafe.Pointer(unsafe.SliceData(b))), nil
}
