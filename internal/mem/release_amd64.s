//go:build !race

#include "textflag.h"

// amd64 is TSO: a plain aligned store is a release store, and a call to
// assembly is opaque to the compiler, which moves no memory access across
// it.

// func storeRelease64(addr *uint64, v uint64)
TEXT ·storeRelease64(SB), NOSPLIT, $0-16
	MOVQ	addr+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	RET

// func storeRelease32(addr *uint32, v uint32)
TEXT ·storeRelease32(SB), NOSPLIT, $0-12
	MOVQ	addr+0(FP), AX
	MOVL	v+8(FP), BX
	MOVL	BX, (AX)
	RET

// func storeFenced64(addr *uint64, v uint64)
TEXT ·storeFenced64(SB), NOSPLIT, $0-16
	MOVQ	addr+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	// A locked read-modify-write of the return address (or-ing 0 leaves
	// it) drains the store buffer: no later load passes the store above.
	LOCK
	ORQ	$0, 0(SP)
	RET
