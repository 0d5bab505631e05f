package transporttest

import (
	"context"
	"errors"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// testFlush issues puts and gets to two targets without waiting for them,
// then checks that Flush of one target makes that target's data visible,
// that FlushAll covers the other, and that the shared Completion
// completes. It also checks Flush's refusals and a cancelled context.
func testFlush(t *testing.T, f factory) {
	const n, ops, chunk = 3, 16, 512
	e := newEnv(t, f, n)
	ctx := context.Background()
	for tg := 0; tg < n; tg++ {
		e.must(e.eps[0].Flush(ctx, tg), "Flush(%d) with nothing outstanding", tg)
	}
	e.must(e.eps[0].FlushAll(ctx), "FlushAll with nothing outstanding")

	var bufs [n][]byte
	var regs [n]transport.Region
	for tg := 1; tg < n; tg++ {
		var key transport.Key
		bufs[tg], key = e.expose(tg, ops*chunk)
		regs[tg] = e.region(0, tg, key, ops*chunk)
	}
	var c transport.Completion
	for i := 0; i < ops; i++ {
		for tg := 1; tg < n; tg++ {
			e.must(regs[tg].Put(i*chunk, pattern(uint64(tg*ops+i), chunk), noNotice, &c), "Put %d to %d", i, tg)
		}
	}
	e.must(e.eps[0].Flush(ctx, 1), "Flush(1)")
	for i := 0; i < ops; i++ {
		checkBytes(t, "rank 1 after Flush(1)", bufs[1][i*chunk:(i+1)*chunk], pattern(uint64(ops+i), chunk))
	}
	e.must(e.eps[0].FlushAll(ctx), "FlushAll")
	for tg := 1; tg < n; tg++ {
		for i := 0; i < ops; i++ {
			checkBytes(t, "target after FlushAll", bufs[tg][i*chunk:(i+1)*chunk], pattern(uint64(tg*ops+i), chunk))
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	e.must(c.Wait(wctx), "waiting for the puts' Completion")

	// Gets issued together, waited for together.
	dsts := make([][]byte, ops)
	var g transport.Completion
	for i := range dsts {
		dsts[i] = filled(chunk)
		e.must(regs[2].Get(i*chunk, dsts[i], noNotice, &g), "Get %d", i)
	}
	e.must(g.Wait(wctx), "waiting for the gets' Completion")
	for i, d := range dsts {
		checkBytes(t, "Get result after its Completion", d, pattern(uint64(2*ops+i), chunk))
	}

	for _, tg := range []int{-1, n} {
		if err := e.eps[0].Flush(ctx, tg); err == nil {
			t.Errorf("Flush(%d) in a world of %d: no error", tg, n)
		}
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if err := e.eps[0].Flush(cctx, 1); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Flush with a cancelled context: %v", err)
	}
	if err := e.eps[0].FlushAll(cctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("FlushAll with a cancelled context: %v", err)
	}
}

// testFlushLocal checks local completion through transport.FlushLocal
// (the endpoint's own if it is a LocalFlusher, else its Flush): after
// it, the sources of the puts issued before may be overwritten without
// changing what the target receives, and the gets' results are in place.
func testFlushLocal(t *testing.T, f factory) {
	const n, ops, chunk = 2, 16, 512
	e := newEnv(t, f, n)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	buf, key := e.expose(1, ops*chunk)
	r := e.region(0, 1, key, ops*chunk)
	srcs := make([][]byte, ops)
	for i := range srcs {
		srcs[i] = pattern(uint64(100+i), chunk)
		e.must(r.Put(i*chunk, srcs[i], noNotice, nil), "Put %d", i)
	}
	e.must(transport.FlushLocal(ctx, e.eps[0], 1), "FlushLocal(1) after puts")
	for i := range srcs {
		clear(srcs[i]) // the buffers are the caller's again
	}
	e.must(e.eps[0].Flush(ctx, 1), "Flush(1) after FlushLocal")
	for i := 0; i < ops; i++ {
		checkBytes(t, "target after FlushLocal, the sources cleared, then Flush", buf[i*chunk:(i+1)*chunk], pattern(uint64(100+i), chunk))
	}

	dsts := make([][]byte, ops)
	for i := range dsts {
		dsts[i] = filled(chunk)
		e.must(r.Get(i*chunk, dsts[i], noNotice, nil), "Get %d", i)
	}
	e.must(transport.FlushLocalAll(ctx, e.eps[0]), "FlushLocalAll after gets")
	for i, d := range dsts {
		checkBytes(t, "Get result after FlushLocalAll", d, pattern(uint64(100+i), chunk))
	}
	// Large gets, whose replies take many reads to arrive: FlushLocal
	// must wait for the last byte of each, not only for its header.
	const big = 256 << 10
	bbuf, bkey := e.expose(1, 4*big)
	copy(bbuf, pattern(7, 4*big))
	e.must(e.eps[1].FlushAll(ctx), "FlushAll at the target")
	br := e.region(0, 1, bkey, 4*big)
	for round := 0; round < 4; round++ {
		got := make([][]byte, 4)
		for i := range got {
			got[i] = filled(big)
			e.must(br.Get(i*big, got[i], noNotice, nil), "large Get %d", i)
		}
		e.must(transport.FlushLocal(ctx, e.eps[0], 1), "FlushLocal(1) after large gets")
		for i, g := range got {
			checkBytes(t, "large Get result after FlushLocal", g, pattern(7, 4*big)[i*big:(i+1)*big])
		}
	}
	if lf, ok := e.eps[0].(transport.LocalFlusher); ok {
		for _, tg := range []int{-1, n} {
			if err := lf.FlushLocal(ctx, tg); err == nil {
				t.Errorf("FlushLocal(%d) in a world of %d: no error", tg, n)
			}
		}
	}
}
