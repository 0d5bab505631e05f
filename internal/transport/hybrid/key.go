package hybrid

import (
	"errors"

	"github.com/narma-rma/narma/internal/transport"
)

// The hybrid key of a region packs the keys of its two exposures:
//
//	bits 63..26  local key XOR remote key  (LocalKeyBits = 38)
//	bits 25..0   remote key                (RemoteKeyBits = 26)
//
// so that remote = key & (1<<26 - 1) and local = key>>26 ^ remote. The
// XOR makes both inner keys depend on the low bits: a key that is wrong
// in its low bits (a stale or made-up key near a real one) is wrong for
// both inner endpoints, and each refuses it with ErrNoRegion. A key that
// differs from a real one only in its high bits is still wrong for the
// local endpoint, but a remote target's endpoint never sees those bits:
// no packing can avoid that (2^64 keys share 2^26 remote parts), and it
// only matters to a caller that forges keys.
//
// The split follows the keys the inner transports make today. shm keys
// are generation<<12 | table slot, the generation counting the
// endpoint's exposures, and TCP keys count them from 1; 38 bits for shm
// and 26 for TCP give both 2^26 (some 67 million) exposures in the life
// of an endpoint, two per window for the engine. An Expose beyond that,
// or of an inner transport whose keys are larger, fails with ErrKeySpace
// and exposes nothing.
const (
	LocalKeyBits  = 38
	RemoteKeyBits = 64 - LocalKeyBits
)

// ErrKeySpace reports an inner key too large for its part of the hybrid
// key.
var ErrKeySpace = errors.New("hybrid: inner key does not fit in a hybrid key")

const remoteMask = transport.Key(1)<<RemoteKeyBits - 1

// pack returns the hybrid key of local key kl and remote key kr, or false
// if one of them does not fit.
func pack(kl, kr transport.Key) (transport.Key, bool) {
	if kl>>LocalKeyBits != 0 || kr>>RemoteKeyBits != 0 {
		return 0, false
	}
	return (kl^kr)<<RemoteKeyBits | kr, true
}

// unpack returns the local and remote keys packed in key.
func unpack(key transport.Key) (kl, kr transport.Key) {
	kr = key & remoteMask
	return key>>RemoteKeyBits ^ kr, kr
}
