package hybrid

import (
	"errors"

	"github.com/narma-rma/narma/internal/transport"
)

// The hybrid key of a region holds the keys of its two exposures side by
// side: the local endpoint's key in its first half, the remote endpoint's
// in its second. Each inner key must fit in half a key (its bytes past the
// half zero), as the keys of shm and tcp, one word each, do. An Expose
// whose inner key does not fails with ErrKeySpace and exposes nothing.
const halfKey = transport.KeySize / 2

// ErrKeySpace reports an inner key too large for its half of the hybrid
// key.
var ErrKeySpace = errors.New("hybrid: inner key does not fit in a hybrid key")

// pack returns the hybrid key of local key kl and remote key kr, or false
// if one of them does not fit.
func pack(kl, kr transport.Key) (transport.Key, bool) {
	if !fitsHalf(kl) || !fitsHalf(kr) {
		return transport.Key{}, false
	}
	var k transport.Key
	copy(k[:halfKey], kl[:halfKey])
	copy(k[halfKey:], kr[:halfKey])
	return k, true
}

// unpack returns the local and remote keys packed in key.
func unpack(key transport.Key) (kl, kr transport.Key) {
	copy(kl[:halfKey], key[:halfKey])
	copy(kr[:halfKey], key[halfKey:])
	return kl, kr
}

// fitsHalf reports whether k's second half is zero.
func fitsHalf(k transport.Key) bool {
	return [halfKey]byte(k[halfKey:]) == [halfKey]byte{}
}
