package transporttest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// noticeRecord is one delivery seen by a notice handler, with a snapshot
// of the region taken by the handler.
type noticeRecord struct {
	src  int
	key  transport.Key
	n    transport.Notice
	snap []byte
}

// noticeLog installs a notice handler at a rank that snapshots the
// region buf on every delivery.
type noticeLog struct {
	mu   sync.Mutex
	recs []noticeRecord
}

func (l *noticeLog) install(ep transport.Endpoint, buf []byte) {
	ep.SetNoticeHandler(func(src int, key transport.Key, n transport.Notice) {
		l.mu.Lock()
		l.recs = append(l.recs, noticeRecord{src, key, n, bytes.Clone(buf)})
		l.mu.Unlock()
	})
}

func (l *noticeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// next waits for delivery number i (from 0) and returns it.
func (l *noticeLog) next(t *testing.T, i int) noticeRecord {
	t.Helper()
	eventually(t, fmt.Sprintf("notice %d", i), func() bool { return l.len() > i })
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recs[i]
}

// testNotice sends one notice on each kind of operation and with each
// kind of notice, and checks that it arrives once, intact, with the right
// source and key, after the data: the handler's snapshot of the region
// already holds the operation's effect. Plain operations deliver nothing.
func testNotice(t *testing.T, f factory) {
	e := newEnv(t, f, 2)
	buf, key := e.expose(1, 256)
	var log noticeLog
	log.install(e.eps[1], buf)
	r := e.region(0, 1, key, len(buf))
	self := e.region(1, 1, key, len(buf))
	count := 0
	expect := func(what string, src int, n transport.Notice, check func(snap []byte)) {
		t.Helper()
		rec := log.next(t, count)
		count++
		if rec.src != src || rec.key != key || rec.n != n {
			t.Fatalf("%s: delivered (src %d, key %d, %+v), want (src %d, key %d, %+v)",
				what, rec.src, rec.key, rec.n, src, key, n)
		}
		check(rec.snap)
	}
	le := binary.LittleEndian

	data := pattern(1, 64)
	n1 := transport.TagNotice(transport.NoticeTag, 7)
	e.must(e.put(r, 0, data, n1), "Put with a tag notice")
	expect("Put", 0, n1, func(s []byte) { checkBytes(t, "region seen by the handler of a Put", s[:64], data) })

	n2 := transport.TagNotice(transport.NoticeCounter, 3)
	e.must(e.acc(r, 64, mem.Sum, mem.Int64, mem.Bytes([]int64{5}), nil, n2), "Accumulate with a counter notice")
	expect("Accumulate", 0, n2, func(s []byte) {
		if v := le.Uint64(s[64:]); v != 5 {
			t.Fatalf("handler of an Accumulate saw %d, want 5", v)
		}
	})

	n3 := transport.SignalNotice(transport.SignalAdd, 128, 1<<63+77)
	res := make([]byte, 8)
	e.must(e.acc(r, 64, mem.Sum, mem.Int64, mem.Bytes([]int64{2}), res, n3), "fetching Accumulate with a signal notice")
	expect("fetching Accumulate", 0, n3, func(s []byte) {
		if v := le.Uint64(s[64:]); v != 7 {
			t.Fatalf("handler of a fetching Accumulate saw %d, want 7", v)
		}
	})

	n4 := transport.SignalNotice(transport.SignalSet, 136, 9)
	e.must(e.cas(r, 72, mem.Int64, make([]byte, 8), mem.Bytes([]int64{9}), res, n4), "CompareSwap with a signal notice")
	expect("CompareSwap", 0, n4, func(s []byte) {
		if v := le.Uint64(s[72:]); v != 9 {
			t.Fatalf("handler of a CompareSwap saw %d, want 9", v)
		}
	})

	n5 := transport.TagNotice(transport.NoticeTag, 1<<31-1)
	got := make([]byte, 64)
	e.must(e.get(r, 0, got, n5), "Get with a tag notice")
	expect("Get", 0, n5, func([]byte) {})
	checkBytes(t, "Get with a notice", got, data)

	// Plain operations deliver nothing: were a notice delivered for them,
	// it would arrive before the next notified operation's.
	e.must(e.put(r, 100, []byte{1}, noNotice), "plain Put")
	e.must(e.get(r, 100, got[:1], noNotice), "plain Get")
	e.must(e.acc(r, 64, mem.Sum, mem.Int64, mem.Bytes([]int64{1}), nil, noNotice), "plain Accumulate")
	e.must(e.cas(r, 64, mem.Int64, res, res, res, noNotice), "plain CompareSwap")
	n6 := transport.TagNotice(transport.NoticeCounter, 0)
	e.must(e.put(r, 200, []byte{42}, n6), "Put with a counter notice")
	expect("Put after plain operations", 0, n6, func(s []byte) {
		if s[200] != 42 {
			t.Fatalf("handler saw %d, want 42", s[200])
		}
	})

	// A notice to self names self as the source.
	n7 := transport.TagNotice(transport.NoticeTag, 99)
	e.must(e.put(self, 201, []byte{43}, n7), "Put to self with a notice")
	expect("Put to self", 1, n7, func(s []byte) {
		if s[201] != 43 {
			t.Fatalf("handler saw %d, want 43", s[201])
		}
	})

	e.flushAll()
	if n := log.len(); n != count {
		t.Fatalf("%d notices delivered, want %d", n, count)
	}
}

// noticeFor is the notice the order test sends with operation seq of src.
func noticeFor(src, seq int) transport.Notice {
	switch seq % 3 {
	case 0:
		return transport.TagNotice(transport.NoticeTag, int32(seq))
	case 1:
		return transport.TagNotice(transport.NoticeCounter, int32(seq))
	}
	return transport.SignalNotice(transport.SignalOp(1+seq%2), uint64(seq*8), uint64(seq)<<8|uint64(src))
}

// testNoticeOrder has every rank, the target included, issue a stream of
// notified puts, accumulates and compare-and-swaps to one target from one
// goroutine each, mixed with plain puts. The target's handler checks, for
// every delivery, that the notice is intact, that it is the next one of
// its source, and that the operation's data is already in the region.
func testNoticeOrder(t *testing.T, f factory) {
	const n, count, slot = 3, 300, 16
	const target = 1
	e := newEnv(t, f, n)
	// Slot (src, seq) at (src*count+seq)*slot; plain puts go past the
	// slots.
	scratch := n * count * slot
	buf, key := e.expose(target, scratch+n*64)
	var (
		mu    sync.Mutex
		next  [n]int
		total int
		errs  errorList
	)
	e.eps[target].SetNoticeHandler(func(src int, k transport.Key, nt transport.Notice) {
		mu.Lock()
		defer mu.Unlock()
		total++
		if src < 0 || src >= n {
			errs.add("notice from rank %d", src)
			return
		}
		seq := next[src]
		next[src]++
		if seq >= count {
			errs.add("notice %d of rank %d: only %d were sent", seq, src, count)
			return
		}
		if k != key {
			errs.add("notice %d of rank %d: key %d, want %d", seq, src, k, key)
		}
		if want := noticeFor(src, seq); nt != want {
			errs.add("notice %d of rank %d: got %+v, want %+v (lost, reordered or altered)", seq, src, nt, want)
			return
		}
		s := buf[(src*count+seq)*slot:][:slot]
		var want []byte
		if seq%4 < 2 {
			want = pattern(uint64(src*count+seq), slot)
		} else {
			want = make([]byte, slot)
			binary.LittleEndian.PutUint64(want, uint64(seq+1))
		}
		if !bytes.Equal(s, want) {
			errs.add("notice %d of rank %d arrived before its data", seq, src)
		}
	})
	var wg sync.WaitGroup
	for src := 0; src < n; src++ {
		r := e.region(src, target, key, len(buf))
		wg.Add(1)
		go func() {
			defer wg.Done()
			zero := make([]byte, 8)
			for seq := 0; seq < count; seq++ {
				off := (src*count + seq) * slot
				nt := noticeFor(src, seq)
				v := mem.Bytes([]int64{int64(seq + 1)})
				var err error
				switch seq % 4 {
				case 0, 1:
					err = e.put(r, off, pattern(uint64(src*count+seq), slot), nt)
				case 2:
					err = e.acc(r, off, mem.Sum, mem.Int64, v, nil, nt)
				case 3:
					err = e.cas(r, off, mem.Int64, zero, v, nil, nt)
				}
				if err == nil && seq%5 == 0 {
					err = e.put(r, scratch+src*64, pattern(uint64(seq), 64), noNotice)
				}
				if err != nil {
					errs.add("rank %d, operation %d: %v", src, seq, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	e.flushAll()
	eventually(t, "all notices", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total >= n*count || errs.failed()
	})
	errs.report(t)
	mu.Lock()
	defer mu.Unlock()
	if total != n*count {
		t.Fatalf("%d notices delivered, want %d", total, n*count)
	}
}

// testNoticeGet checks that a Get's notice comes after the data was read:
// the target's handler overwrites the region, and the Get must still
// return the old contents.
func testNoticeGet(t *testing.T, f factory) {
	e := newEnv(t, f, 2)
	buf, key := e.expose(1, 4096)
	data := pattern(5, len(buf))
	copy(buf, data)
	var mu sync.Mutex
	delivered := 0
	e.eps[1].SetNoticeHandler(func(int, transport.Key, transport.Notice) {
		mu.Lock()
		memset(buf, 0xff)
		delivered++
		mu.Unlock()
	})
	r := e.region(0, 1, key, len(buf))
	got := make([]byte, len(buf))
	e.must(e.get(r, 0, got, transport.TagNotice(transport.NoticeTag, 0)), "Get with a notice")
	checkBytes(t, "Get whose notice handler overwrites the region", got, data)
	eventually(t, "the notice of the Get", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return delivered == 1
	})
	res := make([]byte, 8)
	e.must(e.acc(r, 8, mem.NoOp, mem.Int64, make([]byte, 8), res, transport.TagNotice(transport.NoticeTag, 0)), "fetching NoOp with a notice")
	checkFilled(t, "value fetched by a NoOp, after the previous notice's handler", res, 0xff)
}
