// Package mem owns every unsafe conversion and every raw atomic on window
// memory: aligned allocation, zero-copy views of typed slices as bytes, the
// element types and reduction operations of the RMA model, and their
// element-wise atomic application to byte memory.
//
// It is the only package that turns bytes into typed words. Transports call
// it to apply accumulates to exposed memory; the engine calls it to check
// and convert user buffers. Nothing here knows about ranks or epochs.
package mem

import "fmt"

// Type is the element type of an accumulate-family operation.
type Type uint8

// The element types. The zero Type is invalid.
const (
	Int8 Type = iota + 1
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float32
	Float64
	numTypes
)

var typeNames = [...]string{"invalid", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"}

var typeSizes = [...]int{0, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8}

// Valid reports whether t is one of the defined element types.
func (t Type) Valid() bool { return t > 0 && t < numTypes }

// Size returns the size of one element in bytes, or 0 for an invalid type.
func (t Type) Size() int {
	if !t.Valid() {
		return 0
	}
	return typeSizes[t]
}

// IsFloat reports whether t is a floating-point type.
func (t Type) IsFloat() bool { return t == Float32 || t == Float64 }

// String returns the Go name of the type, e.g. "float64".
func (t Type) String() string {
	if !t.Valid() {
		return fmt.Sprintf("Type(%d)", uint8(t))
	}
	return typeNames[t]
}

// Op is a reduction operation of the accumulate family.
type Op uint8

// The operations. The zero Op is invalid.
const (
	Sum Op = iota + 1
	Prod
	Min
	Max
	Band
	Bor
	Bxor
	Replace
	NoOp
	numOps
)

var opNames = [...]string{"invalid", "SUM", "PROD", "MIN", "MAX", "BAND", "BOR", "BXOR", "REPLACE", "NO_OP"}

// Valid reports whether o is one of the defined operations.
func (o Op) Valid() bool { return o > 0 && o < numOps }

// ValidFor reports whether o may be applied to elements of type t: the
// bitwise operations are defined on integer types only.
func (o Op) ValidFor(t Type) bool {
	if !o.Valid() || !t.Valid() {
		return false
	}
	switch o {
	case Band, Bor, Bxor:
		return !t.IsFloat()
	}
	return true
}

// String returns the MPI name of the operation, e.g. "SUM".
func (o Op) String() string {
	if !o.Valid() {
		return fmt.Sprintf("Op(%d)", uint8(o))
	}
	return opNames[o]
}

// Elem is the constraint satisfied by the element types of the RMA model.
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// TypeOf returns the Type of T.
func TypeOf[T Elem]() Type {
	var z T
	switch any(z).(type) {
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case float32:
		return Float32
	case float64:
		return Float64
	}
	// A named type (~T): fall back on size and kind via a second switch
	// on the underlying representation.
	return typeOfUnderlying[T]()
}
