package match

import (
	"testing"
)

// decodeOps turns fuzz input into an operation sequence. The first byte
// selects the key space and maxEmpty; then each operation takes two bytes:
//
//	byte 0: bits 0-1 kind (0, 1 Push; 2 Take; 3 Peek, or Reset if bits 2-7
//	        are all set), bits 2-7 extend the source
//	byte 1: low nibble tag, high nibble source
//
// For patterns, the nibble value 15 is Any and 14 a negative non-Any value.
func decodeOps(data []byte) (ops []op, maxEmpty int) {
	if len(data) == 0 {
		return nil, 1024
	}
	cfg := data[0]
	data = data[1:]
	maxEmpty = 1024
	if cfg&1 != 0 {
		maxEmpty = 1 + int(cfg>>1&7) // 1..8: exercise eviction
	}
	wide := cfg&0x10 != 0 // spread sources with the extra bits
	for len(data) >= 2 {
		a, b := data[0], data[1]
		data = data[2:]
		var kind opKind
		switch a & 3 {
		case 0, 1:
			kind = opPush
		case 2:
			kind = opTake
		case 3:
			kind = opPeek
			if a>>2 == 0x3f {
				ops = append(ops, op{kind: opReset})
				continue
			}
		}
		srcN, tagN := int32(b>>4), int32(b&15)
		if kind == opPush {
			src, tag := srcN%14, tagN%14
			if wide {
				src += int32(a>>2) * 14
				tag *= 1 << 20
			}
			ops = append(ops, op{opPush, src, tag})
			continue
		}
		pat := func(v int32, scale int32) int32 {
			switch v {
			case 15:
				return Any
			case 14:
				return -2
			}
			return v * scale
		}
		src, tag := pat(srcN, 1), pat(tagN, 1)
		if wide {
			if srcN < 14 {
				src += int32(a>>2) * 14
			}
			tag = pat(tagN, 1<<20)
		}
		ops = append(ops, op{kind, src, tag})
	}
	return ops, maxEmpty
}

func FuzzQueue(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0x11, 2, 0x11})
	f.Add([]byte{0, 0, 0x12, 0, 0x21, 0, 0x13, 2, 0xf1, 2, 0x2f, 2, 0xff, 3, 0xff})
	f.Add([]byte{1, 0, 0x00, 0, 0x01, 0, 0x02, 2, 0x01, 2, 0x00, 0, 0x03, 2, 0xf3, 2, 0xff})
	f.Add([]byte{0x11, 0x04, 0x12, 0x08, 0x12, 0x0c, 0x34, 0x06, 0x12, 0xfe, 0x11, 0x02, 0xff, 0, 0x55, 0x0a, 0xfe})
	f.Add([]byte{3, 0, 0x11, 0, 0x22, 0, 0x33, 0xff, 0, 0, 0x44, 2, 0x44, 2, 0x11, 3, 0xee, 2, 0xef})
	// A longer mixed sequence.
	long := []byte{1}
	for i := range 200 {
		b := byte(i*37 + 11)
		switch i % 5 {
		case 0, 1, 2:
			long = append(long, 0, b)
		case 3:
			long = append(long, 2, b|0x0f)
		case 4:
			long = append(long, 2, b)
		}
	}
	f.Add(long)
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, me := decodeOps(data)
		old := maxEmpty
		maxEmpty = me
		defer func() { maxEmpty = old }()
		// Full invariant checks are O(size) per call: every step for short
		// sequences, now and then for long ones, to keep fuzzing fast.
		every := 1
		if len(ops) > 64 {
			every = 32
		}
		runModel(t, ops, every)
	})
}
