package mem

import "reflect"

// typeOfUnderlying maps a named element type (one whose underlying type is
// a basic numeric type) to its Type by reflect kind. TypeOf calls it only
// when the fast type switch on the basic types did not match.
func typeOfUnderlying[T Elem]() Type {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int8:
		return Int8
	case reflect.Int16:
		return Int16
	case reflect.Int32:
		return Int32
	case reflect.Int64:
		return Int64
	case reflect.Uint8:
		return Uint8
	case reflect.Uint16:
		return Uint16
	case reflect.Uint32:
		return Uint32
	case reflect.Uint64:
		return Uint64
	case reflect.Float32:
		return Float32
	case reflect.Float64:
		return Float64
	}
	// Unreachable: the Elem constraint admits no other kinds.
	return 0
}
