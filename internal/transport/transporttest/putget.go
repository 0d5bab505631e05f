package transporttest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// testPutGet moves blocks of many sizes, at the start, the end and an odd
// offset of a region, between every pair of ranks including each rank and
// itself, and checks the target memory byte for byte (the block is there,
// nothing around it changed) and a Get of it by a third rank.
func testPutGet(t *testing.T, f factory) {
	const n = 3
	const size = 1<<20 + 256
	e := newEnv(t, f, n)
	bufs := make([][]byte, n)
	var keys [n]transport.Key
	for i := range bufs {
		bufs[i], keys[i] = e.expose(i, size)
	}
	sentinel := bytes.Repeat([]byte{0x5a}, size)
	master := pattern(1, size+1024)
	sizes := []int{0, 1, 2, 7, 8, 9, 63, 64, 65, 1000, 4096, 1<<16 + 3, 1 << 20}
	dst := make([]byte, size)
	seq := 0
	for o := 0; o < n; o++ {
		for tg := 0; tg < n; tg++ {
			r := e.region(o, tg, keys[tg], size)
			reader := (o + 1) % n
			rr := e.region(reader, tg, keys[tg], size)
			buf := bufs[tg]
			for _, sz := range sizes {
				for _, off := range []int{0, 13, size - sz} {
					seq++
					what := fmt.Sprintf("%d bytes at %d from rank %d to rank %d", sz, off, o, tg)
					copy(buf, sentinel)
					src := master[seq%1000 : seq%1000+sz]
					e.must(e.put(r, off, src, noNotice), "Put %s", what)
					e.flush(o, tg)
					if !bytes.Equal(buf[off:off+sz], src) {
						checkBytes(t, "target memory after Put of "+what, buf[off:off+sz], src)
					}
					if !bytes.Equal(buf[:off], sentinel[:off]) || !bytes.Equal(buf[off+sz:], sentinel[off+sz:]) {
						checkBytes(t, "target memory around Put of "+what, buf[:off], sentinel[:off])
						checkBytes(t, "target memory around Put of "+what, buf[off+sz:], sentinel[off+sz:])
					}
					d := dst[:sz]
					copy(d, sentinel)
					e.must(e.get(rr, off, d, noNotice), "Get by rank %d of %s", reader, what)
					if !bytes.Equal(d, src) {
						checkBytes(t, fmt.Sprintf("Get by rank %d of %s", reader, what), d, src)
					}
				}
			}
		}
	}
}

// testPutGetConcurrent has many goroutines of every rank write and read
// back their own chunks of one region at the same time.
func testPutGetConcurrent(t *testing.T, f factory) {
	const n, workers, rounds, chunk = 4, 4, 40, 4096
	e := newEnv(t, f, n)
	buf, key := e.expose(0, n*workers*chunk)
	var errs errorList
	var wg sync.WaitGroup
	for rank := 0; rank < n; rank++ {
		r := e.region(rank, 0, key, len(buf))
		for w := 0; w < workers; w++ {
			id := rank*workers + w
			wg.Add(1)
			go func() {
				defer wg.Done()
				off := id * chunk
				got := make([]byte, chunk)
				for k := 0; k < rounds; k++ {
					src := pattern(uint64(id*rounds+k), chunk)
					if err := e.put(r, off, src, noNotice); err != nil {
						errs.add("worker %d: Put: %v", id, err)
						return
					}
					if err := e.get(r, off, got, noNotice); err != nil {
						errs.add("worker %d: Get: %v", id, err)
						return
					}
					if i := firstDiff(got, src); i >= 0 {
						errs.add("worker %d round %d: Get after Put differs at byte %d", id, k, i)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	errs.report(t)
	e.flushAll()
	for id := 0; id < n*workers; id++ {
		want := pattern(uint64(id*rounds+rounds-1), chunk)
		checkBytes(t, fmt.Sprintf("chunk of worker %d", id), buf[id*chunk:(id+1)*chunk], want)
	}
}
