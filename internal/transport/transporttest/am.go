package transporttest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// amHeader is the header the AM tests send: who sent what to whom.
type amHeader struct {
	src, dst, id, seq uint32
}

const amHeaderSize = 16

func (h amHeader) encode(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, h.src)
	b = binary.LittleEndian.AppendUint32(b, h.dst)
	b = binary.LittleEndian.AppendUint32(b, h.id)
	return binary.LittleEndian.AppendUint32(b, h.seq)
}

func decodeAMHeader(b []byte) (amHeader, bool) {
	if len(b) != amHeaderSize {
		return amHeader{}, false
	}
	le := binary.LittleEndian
	return amHeader{le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:]), le.Uint32(b[12:])}, true
}

// amSeed is the seed of the payload of message seq from src to dst.
func amSeed(src, dst, seq int) uint64 { return uint64(src)<<40 | uint64(dst)<<32 | uint64(seq) }

// amLimit returns the payload size to send after a header of hdr bytes:
// want, or less if MaxAM says so (negative if it leaves no room).
func (e *env) amLimit(hdr, want int) int {
	if e.caps.MaxAM == 0 {
		return want
	}
	return min(want, e.caps.MaxAM-hdr)
}

// testAM sends messages of several sizes between every pair of ranks,
// self included, to several handler ids, and checks that each arrives
// once, at the right handler, from the right source, intact although the
// sender reuses its buffers as soon as SendAM returns. Empty messages and
// refusals of bad ranks and ids are checked too.
func testAM(t *testing.T, f factory) {
	const n = 3
	e := newEnv(t, f, n)
	ids := []transport.AMID{0, 5, transport.MaxAMID - 1}
	type rec struct {
		dst, src int
		id       transport.AMID
		hdr, pl  []byte
	}
	var mu sync.Mutex
	var recs []rec
	for dst, ep := range e.eps {
		for _, id := range ids {
			ep.SetAMHandler(id, func(src int, hdr, payload []byte) {
				mu.Lock()
				recs = append(recs, rec{dst, src, id, bytes.Clone(hdr), bytes.Clone(payload)})
				mu.Unlock()
			})
		}
	}
	var sizes []int
	for _, s := range []int{0, 1, 100, 70000} {
		if l := e.amLimit(amHeaderSize, s); l == s {
			sizes = append(sizes, s)
		}
	}
	sent := 0
	hdr := make([]byte, 0, amHeaderSize)
	payload := make([]byte, 70000)
	for src := 0; src < n; src++ {
		for dst := 0; dst < n; dst++ {
			for _, id := range ids {
				for seq, size := range sizes {
					h := amHeader{uint32(src), uint32(dst), uint32(id), uint32(seq)}.encode(hdr[:0])
					pl := payload[:size]
					fill(pl, amSeed(src, dst, seq))
					e.must(e.eps[src].SendAM(dst, id, h, pl), "SendAM of %d bytes from %d to %d, id %d", size, src, dst, id)
					memset(h, 0xee)
					memset(pl, 0xee)
					sent++
				}
			}
			// An empty message.
			e.must(e.eps[src].SendAM(dst, ids[1], nil, nil), "empty SendAM from %d to %d", src, dst)
			sent++
		}
	}
	e.flushAll()
	eventually(t, "every active message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(recs) >= sent
	})
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != sent {
		t.Fatalf("%d messages delivered, %d sent", len(recs), sent)
	}
	seen := make(map[amHeader]bool)
	empty := make(map[[2]int]int)
	for _, r := range recs {
		if len(r.hdr) == 0 && len(r.pl) == 0 {
			if r.id != ids[1] {
				t.Errorf("empty message from %d to %d delivered to handler %d, want %d", r.src, r.dst, r.id, ids[1])
			}
			empty[[2]int{r.src, r.dst}]++
			continue
		}
		h, ok := decodeAMHeader(r.hdr)
		if !ok {
			t.Fatalf("message from %d to %d handler %d: header of %d bytes %x: overwritten or truncated", r.src, r.dst, r.id, len(r.hdr), r.hdr)
		}
		if int(h.src) != r.src || int(h.dst) != r.dst || transport.AMID(h.id) != r.id {
			t.Fatalf("message %+v delivered at rank %d, handler %d, with source %d", h, r.dst, r.id, r.src)
		}
		if seen[h] {
			t.Fatalf("message %+v delivered twice", h)
		}
		seen[h] = true
		if int(h.seq) >= len(sizes) {
			t.Fatalf("message %+v was never sent", h)
		}
		want := pattern(amSeed(r.src, r.dst, int(h.seq)), sizes[h.seq])
		checkBytes(t, fmt.Sprintf("payload of message %+v", h), r.pl, want)
	}
	for src := 0; src < n; src++ {
		for dst := 0; dst < n; dst++ {
			if c := empty[[2]int{src, dst}]; c != 1 {
				t.Errorf("empty message from %d to %d delivered %d times", src, dst, c)
			}
		}
	}

	for _, dst := range []int{-1, n, 1 << 20} {
		if err := e.eps[0].SendAM(dst, ids[0], []byte{1}, nil); err == nil {
			t.Errorf("SendAM to rank %d in a world of %d: no error", dst, n)
		}
	}
	if err := e.eps[0].SendAM(1, transport.MaxAMID, []byte{1}, nil); err == nil {
		t.Errorf("SendAM to AMID %d: no error", transport.MaxAMID)
	}
}

// testAMOrder has every rank send a stream of messages, from one
// goroutine, to every rank in turn, self included, rotating over several
// handler ids; every target must handle each source's messages in the
// order they were sent, whatever the handler.
func testAMOrder(t *testing.T, f factory) {
	const n, count = 3, 400
	e := newEnv(t, f, n)
	ids := []transport.AMID{1, 2, 3}
	size := func(seq int) int { return max(0, e.amLimit(amHeaderSize, seq%200)) }
	var mu sync.Mutex
	var next [n][n]int // next[dst][src]
	var total int
	var errs errorList
	for dst, ep := range e.eps {
		for _, id := range ids {
			ep.SetAMHandler(id, func(src int, hdr, payload []byte) {
				mu.Lock()
				defer mu.Unlock()
				total++
				h, ok := decodeAMHeader(hdr)
				switch {
				case !ok:
					errs.add("rank %d handler %d: bad header %x", dst, id, hdr)
					return
				case int(h.src) != src || int(h.dst) != dst || transport.AMID(h.id) != id:
					errs.add("message %+v delivered at rank %d, handler %d, with source %d", h, dst, id, src)
					return
				case int(h.seq) != next[dst][src]:
					errs.add("rank %d got message %d of rank %d, expected %d", dst, h.seq, src, next[dst][src])
				}
				next[dst][src] = int(h.seq) + 1
				if !bytes.Equal(payload, pattern(amSeed(src, dst, int(h.seq)), size(int(h.seq)))) {
					errs.add("message %+v: payload altered", h)
				}
			})
		}
	}
	var wg sync.WaitGroup
	for src := 0; src < n; src++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hdr := make([]byte, 0, amHeaderSize)
			buf := make([]byte, 200)
			for seq := 0; seq < count; seq++ {
				for dst := 0; dst < n; dst++ {
					id := ids[(seq+dst)%len(ids)]
					h := amHeader{uint32(src), uint32(dst), uint32(id), uint32(seq)}.encode(hdr[:0])
					pl := buf[:size(seq)]
					fill(pl, amSeed(src, dst, seq))
					if err := e.eps[src].SendAM(dst, id, h, pl); err != nil {
						errs.add("rank %d: SendAM %d to %d: %v", src, seq, dst, err)
						return
					}
					memset(h, 0xee)
					memset(pl, 0xee)
				}
			}
		}()
	}
	wg.Wait()
	eventually(t, "every active message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total >= n*n*count || errs.failed()
	})
	errs.report(t)
	mu.Lock()
	defer mu.Unlock()
	if total != n*n*count {
		t.Fatalf("%d messages delivered, %d sent", total, n*n*count)
	}
}

// testAMReply has a handler answer each message with SendAM from inside
// the handler, which must work and keep order.
func testAMReply(t *testing.T, f factory) {
	const count = 200
	e := newEnv(t, f, 2)
	var errs errorList
	e.eps[1].SetAMHandler(1, func(src int, hdr, payload []byte) {
		reply := append([]byte{'r'}, hdr...)
		if err := e.eps[1].SendAM(src, 2, reply, payload); err != nil {
			errs.add("reply from the handler: %v", err)
		}
	})
	var mu sync.Mutex
	var got []uint32
	e.eps[0].SetAMHandler(2, func(src int, hdr, payload []byte) {
		mu.Lock()
		defer mu.Unlock()
		if src != 1 || len(hdr) != 5 || hdr[0] != 'r' || !bytes.Equal(payload, []byte("ping")) {
			errs.add("bad reply from %d: %q %q", src, hdr, payload)
			return
		}
		got = append(got, binary.LittleEndian.Uint32(hdr[1:]))
	})
	for i := 0; i < count; i++ {
		e.must(e.eps[0].SendAM(1, 1, binary.LittleEndian.AppendUint32(nil, uint32(i)), []byte("ping")), "ping %d", i)
	}
	eventually(t, "every reply", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= count || errs.failed()
	})
	errs.report(t)
	mu.Lock()
	defer mu.Unlock()
	for i, v := range got {
		if v != uint32(i) {
			t.Fatalf("reply %d answers ping %d", i, v)
		}
	}
	if len(got) != count {
		t.Fatalf("%d replies, want %d", len(got), count)
	}
}
