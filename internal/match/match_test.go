package match

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// refQueue is the naive reference: a slice in arrival order, scanned
// linearly from the front.
type refQueue struct{ s [][2]int32 }

func refMatches(n [2]int32, src, tag int32) bool {
	return (src == Any || src == n[0]) && (tag == Any || tag == n[1])
}

func (r *refQueue) Push(src, tag int32) { r.s = append(r.s, [2]int32{src, tag}) }

func (r *refQueue) find(src, tag int32) int {
	for i, n := range r.s {
		if refMatches(n, src, tag) {
			return i
		}
	}
	return -1
}

func (r *refQueue) Take(src, tag int32) (int32, int32, bool) {
	i := r.find(src, tag)
	if i < 0 {
		return 0, 0, false
	}
	n := r.s[i]
	r.s = append(r.s[:i], r.s[i+1:]...)
	return n[0], n[1], true
}

func (r *refQueue) Peek(src, tag int32) (int32, int32, bool) {
	i := r.find(src, tag)
	if i < 0 {
		return 0, 0, false
	}
	return r.s[i][0], r.s[i][1], true
}

func (r *refQueue) Len() int { return len(r.s) }
func (r *refQueue) Reset()   { r.s = r.s[:0] }

// setMaxEmpty changes maxEmpty for the duration of a test.
func setMaxEmpty(t testing.TB, v int) {
	old := maxEmpty
	maxEmpty = v
	t.Cleanup(func() { maxEmpty = old })
}

// checkInvariants verifies the internal structure of q against itself: list
// linkage, arrival order (strictly increasing sequence numbers along every
// list), list membership, counts, free lists and the bound on empty heads.
func checkInvariants(t testing.TB, q *Queue) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("invariant: "+format, args...)
	}
	// walk returns the nodes of l (linked through slot k), checking links and
	// order.
	walk := func(l list, k int, what string) []int32 {
		t.Helper()
		var out []int32
		prev := int32(0)
		var prevSeq uint64
		for i := l.first; i != 0; i = q.nodes[i].links[k].next {
			if i < 0 || int(i) >= len(q.nodes) {
				fail("%s: index %d out of range", what, i)
			}
			n := &q.nodes[i]
			if n.links[k].prev != prev {
				fail("%s: node %d prev %d, want %d", what, i, n.links[k].prev, prev)
			}
			if prev != 0 && n.seq <= prevSeq {
				fail("%s: seq %d after %d", what, n.seq, prevSeq)
			}
			if len(out) > len(q.nodes) {
				fail("%s: cycle", what)
			}
			out = append(out, i)
			prev, prevSeq = i, n.seq
		}
		if l.last != prev {
			fail("%s: last %d, want %d", what, l.last, prev)
		}
		return out
	}
	all := walk(q.all, kGlobal, "global")
	if len(all) != q.n || q.Len() != q.n {
		fail("global list has %d nodes, n = %d", len(all), q.n)
	}
	live := make(map[int32]bool, len(all))
	for _, i := range all {
		live[i] = true
		n := &q.nodes[i]
		if n.src < 0 || n.tag < 0 || n.seq == 0 || n.seq > q.seq {
			fail("node %d: bad notice %+v", i, *n)
		}
	}
	// Free list: exactly the other nodes.
	nFree := 0
	for i := q.free; i != 0; i = q.nodes[i].links[kGlobal].next {
		if live[i] {
			fail("node %d both live and free", i)
		}
		nFree++
		if nFree > len(q.nodes) {
			fail("free list cycle")
		}
	}
	if len(q.nodes) > 0 && nFree+q.n != len(q.nodes)-1 {
		fail("%d free + %d live != %d nodes", nFree, q.n, len(q.nodes)-1)
	}
	// Per-source lists.
	total := 0
	for s, l := range q.srcs {
		for _, i := range walk(l, kSource, fmt.Sprintf("source %d", s)) {
			if !live[i] || q.nodes[i].src != int32(s) {
				fail("source %d list holds node %d %+v", s, i, q.nodes[i])
			}
			total++
		}
	}
	if total != q.n {
		fail("source lists hold %d nodes, want %d", total, q.n)
	}
	checkIndex := func(x *index, k int, what string, key func(*node) uint64, slot func(*node) int32) {
		t.Helper()
		total, nonEmpty, empty := 0, 0, 0
		for key0, s := range x.m {
			if s <= 0 || int(s) >= len(x.h) {
				fail("%s: key %#x slot %d out of range", what, key0, s)
			}
			h := &x.h[s]
			if h.key != key0 {
				fail("%s: slot %d key %#x, map key %#x", what, s, h.key, key0)
			}
			nodes := walk(h.l, k, fmt.Sprintf("%s %#x", what, key0))
			if len(nodes) == 0 {
				empty++
			} else {
				nonEmpty++
			}
			for _, i := range nodes {
				n := &q.nodes[i]
				if !live[i] || key(n) != key0 || slot(n) != s {
					fail("%s %#x list holds node %d %+v", what, key0, i, *n)
				}
				total++
			}
		}
		if total != q.n {
			fail("%s lists hold %d nodes, want %d", what, total, q.n)
		}
		if empty != x.nEmpty || empty > maxEmpty {
			fail("%s: %d empty heads, nEmpty %d, maxEmpty %d", what, empty, x.nEmpty, maxEmpty)
		}
		// Empty-head order: exactly the empty heads, each once.
		seen := 0
		prev := int32(0)
		for s := x.oldest; s != 0; s = x.h[s].next {
			if x.h[s].l.first != 0 || x.m[x.h[s].key] != s || x.h[s].prev != prev {
				fail("%s: bad empty head %d %+v", what, s, x.h[s])
			}
			prev = s
			seen++
			if seen > len(x.h) {
				fail("%s: empty order cycle", what)
			}
		}
		if seen != empty || x.newest != prev {
			fail("%s: empty order has %d heads (newest %d), want %d (%d)", what, seen, x.newest, empty, prev)
		}
		if x.lastSlot != 0 && x.m[x.lastKey] != x.lastSlot {
			fail("%s: cached key %#x slot %d, map has %d", what, x.lastKey, x.lastSlot, x.m[x.lastKey])
		}
		nFree := 0
		for s := x.free; s != 0; s = x.h[s].next {
			nFree++
			if nFree > len(x.h) {
				fail("%s: free cycle", what)
			}
		}
		if len(x.h) > 0 && nFree+len(x.m) != len(x.h)-1 {
			fail("%s: %d free + %d mapped != %d slots", what, nFree, len(x.m), len(x.h)-1)
		}
	}
	checkIndex(&q.tags, kTag, "tag", func(n *node) uint64 { return uint64(n.tag) },
		func(n *node) int32 { return n.tagH })
	checkIndex(&q.pairs, kPair, "pair", func(n *node) uint64 { return pairKey(n.src, n.tag) },
		func(n *node) int32 { return n.pairH })
}

// opKind enumerates the operations of model-based tests.
type opKind uint8

const (
	opPush opKind = iota
	opTake
	opPeek
	opReset
)

type op struct {
	kind     opKind
	src, tag int32
}

func (o op) String() string {
	name := [...]string{"Push", "Take", "Peek", "Reset"}[o.kind]
	return fmt.Sprintf("%s(%d, %d)", name, o.src, o.tag)
}

// runModel applies ops to a Queue and to the reference, comparing every
// result and Len. If checkEvery > 0, internal invariants are verified every
// checkEvery operations and at the end.
func runModel(t testing.TB, ops []op, checkEvery int) {
	t.Helper()
	var q Queue
	var r refQueue
	for step, o := range ops {
		var gs, gt, ws, wt int32
		var gok, wok bool
		switch o.kind {
		case opPush:
			q.Push(o.src, o.tag)
			r.Push(o.src, o.tag)
		case opTake:
			gs, gt, gok = q.Take(o.src, o.tag)
			ws, wt, wok = r.Take(o.src, o.tag)
		case opPeek:
			gs, gt, gok = q.Peek(o.src, o.tag)
			ws, wt, wok = r.Peek(o.src, o.tag)
		case opReset:
			q.Reset()
			r.Reset()
		}
		if gs != ws || gt != wt || gok != wok {
			t.Fatalf("step %d %v: got (%d, %d, %v), want (%d, %d, %v)", step, o, gs, gt, gok, ws, wt, wok)
		}
		if q.Len() != r.Len() {
			t.Fatalf("step %d %v: Len %d, want %d", step, o, q.Len(), r.Len())
		}
		// The check walks every per-source head: with huge source
		// numbers, check only now and then.
		if checkEvery > 0 && step%checkEvery == 0 && (len(q.srcs) <= 4096 || step%100 == 0) {
			checkInvariants(t, &q)
		}
	}
	// Drain: everything left comes out in arrival order, exactly once.
	for r.Len() > 0 {
		ws, wt, _ := r.Take(Any, Any)
		gs, gt, ok := q.Take(Any, Any)
		if !ok || gs != ws || gt != wt {
			t.Fatalf("drain: got (%d, %d, %v), want (%d, %d, true)", gs, gt, ok, ws, wt)
		}
	}
	if _, _, ok := q.Take(Any, Any); ok || q.Len() != 0 {
		t.Fatalf("drain: queue not empty (Len %d)", q.Len())
	}
	if checkEvery > 0 {
		checkInvariants(t, &q)
	}
}

// randomOps returns n random operations over nSrc sources and nTag tags.
// pushBias is the probability of a push; patterns use wildcards with
// probability 1/4 per field, and occasionally values that match nothing
// (unseen sources and tags, or negative values other than Any).
func randomOps(rng *rand.Rand, n, nSrc, nTag int, pushBias float64) []op {
	ops := make([]op, 0, n)
	pat := func(k int) int32 {
		switch x := rng.IntN(40); {
		case x < 10:
			return Any
		case x == 10:
			return int32(k + rng.IntN(3)) // unseen
		case x == 11:
			return -2 - int32(rng.IntN(1<<20))
		default:
			return int32(rng.IntN(k))
		}
	}
	for range n {
		switch x := rng.Float64(); {
		case x < pushBias:
			ops = append(ops, op{opPush, int32(rng.IntN(nSrc)), int32(rng.IntN(nTag))})
		case x < 0.9995:
			kind := opTake
			if rng.IntN(4) == 0 {
				kind = opPeek
			}
			ops = append(ops, op{kind, pat(nSrc), pat(nTag)})
		default:
			ops = append(ops, op{kind: opReset})
		}
	}
	return ops
}

func TestModel(t *testing.T) {
	shapes := []struct {
		nSrc, nTag int
		bias       float64
		maxEmpty   int
	}{
		{1, 1, 0.5, 1024},
		{2, 3, 0.5, 1024},
		{4, 4, 0.6, 1024},
		{4, 4, 0.4, 1},
		{8, 64, 0.55, 1024},
		{8, 64, 0.55, 3},
		{64, 8, 0.5, 1024},
		{300, 1000, 0.6, 1024},
		{300, 1000, 0.5, 16},
		{1 << 14, 1 << 30, 0.5, 1024}, // keys practically never recur
		{3, 1 << 30, 0.5, 8},
	}
	steps := 20000
	if testing.Short() {
		steps = 3000
	}
	for _, sh := range shapes {
		for seed := uint64(1); seed <= 3; seed++ {
			name := fmt.Sprintf("src%d/tag%d/push%.2f/maxEmpty%d/seed%d", sh.nSrc, sh.nTag, sh.bias, sh.maxEmpty, seed)
			t.Run(name, func(t *testing.T) {
				setMaxEmpty(t, sh.maxEmpty)
				rng := rand.New(rand.NewPCG(seed, uint64(sh.nSrc)<<32|uint64(sh.nTag)))
				ops := randomOps(rng, steps, sh.nSrc, sh.nTag, sh.bias)
				// Full invariant checks are O(size) per step: run them on a
				// prefix, then compare results only.
				runModel(t, ops[:min(len(ops), 600)], 1)
				runModel(t, ops, 500)
			})
		}
	}
}

func TestZeroValue(t *testing.T) {
	var q Queue
	if q.Len() != 0 {
		t.Fatal("zero Queue not empty")
	}
	for _, p := range [][2]int32{{Any, Any}, {0, Any}, {Any, 0}, {0, 0}, {5, 7}} {
		if _, _, ok := q.Take(p[0], p[1]); ok {
			t.Fatalf("Take%v on zero Queue succeeded", p)
		}
		if _, _, ok := q.Peek(p[0], p[1]); ok {
			t.Fatalf("Peek%v on zero Queue succeeded", p)
		}
	}
	q.Reset()
	checkInvariants(t, &q)
	q.Push(3, 9)
	if s, tg, ok := q.Peek(Any, 9); !ok || s != 3 || tg != 9 || q.Len() != 1 {
		t.Fatalf("Peek = (%d, %d, %v), Len %d", s, tg, ok, q.Len())
	}
	if s, tg, ok := q.Take(3, 9); !ok || s != 3 || tg != 9 || q.Len() != 0 {
		t.Fatalf("Take = (%d, %d, %v), Len %d", s, tg, ok, q.Len())
	}
	checkInvariants(t, &q)
}

func TestPushPanics(t *testing.T) {
	for _, p := range [][2]int32{{-1, 0}, {0, -1}, {-5, 3}, {maxSource, 0}, {1<<31 - 1, 0}, {0, -1 << 31}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Push%v did not panic", p)
				}
			}()
			var q Queue
			q.Push(p[0], p[1])
		}()
	}
	var q Queue
	q.Push(maxSource-1, 1<<31-1) // the extremes are valid
	if s, tg, ok := q.Take(maxSource-1, 1<<31-1); !ok || s != maxSource-1 || tg != 1<<31-1 {
		t.Fatalf("Take = (%d, %d, %v)", s, tg, ok)
	}
}

func TestNoMatchPatterns(t *testing.T) {
	var q Queue
	q.Push(0, 0)
	q.Push(1, 2)
	for _, p := range [][2]int32{{-2, Any}, {Any, -2}, {-2, -2}, {0, -2}, {-2, 0}, {2, Any}, {Any, 1}, {0, 2}, {1, 0}, {-1 << 31, Any}, {maxSource + 5, Any}} {
		if s, tg, ok := q.Peek(p[0], p[1]); ok {
			t.Errorf("Peek%v = (%d, %d, true)", p, s, tg)
		}
		if s, tg, ok := q.Take(p[0], p[1]); ok {
			t.Errorf("Take%v = (%d, %d, true)", p, s, tg)
		}
	}
	if q.Len() != 2 {
		t.Fatalf("Len %d, want 2", q.Len())
	}
}

func TestPeekDoesNotRemove(t *testing.T) {
	var q Queue
	q.Push(1, 1)
	q.Push(2, 2)
	for range 3 {
		if s, tg, ok := q.Peek(Any, Any); !ok || s != 1 || tg != 1 {
			t.Fatalf("Peek = (%d, %d, %v)", s, tg, ok)
		}
		if s, tg, ok := q.Peek(2, Any); !ok || s != 2 || tg != 2 {
			t.Fatalf("Peek(2, Any) = (%d, %d, %v)", s, tg, ok)
		}
	}
	if q.Len() != 2 {
		t.Fatalf("Len %d", q.Len())
	}
}

func TestOldestAcrossLists(t *testing.T) {
	// The oldest matching notice wins even when other lists hold older ones.
	var q Queue
	q.Push(1, 5) // seq 1
	q.Push(2, 7) // seq 2
	q.Push(2, 5) // seq 3
	q.Push(1, 7) // seq 4
	want := []struct {
		src, tag, gs, gt int32
	}{
		{Any, 7, 2, 7},
		{1, Any, 1, 5},
		{Any, 5, 2, 5},
		{Any, Any, 1, 7},
	}
	for _, w := range want {
		if s, tg, ok := q.Take(w.src, w.tag); !ok || s != w.gs || tg != w.gt {
			t.Fatalf("Take(%d, %d) = (%d, %d, %v), want (%d, %d)", w.src, w.tag, s, tg, ok, w.gs, w.gt)
		}
		checkInvariants(t, &q)
	}
}

func TestPerSourceOrder(t *testing.T) {
	// Notices carry their per-source push index in the tag; whichever
	// pattern takes them, each source's notices come out in push order.
	const nSrc, perSrc = 37, 200
	rng := rand.New(rand.NewPCG(7, 7))
	var q Queue
	next := make([]int32, nSrc) // next tag to push per source
	want := make([]int32, nSrc) // next tag expected per source
	for range nSrc * perSrc * 3 {
		if rng.IntN(3) != 0 {
			s := rng.IntN(nSrc)
			q.Push(int32(s), next[s])
			next[s]++
			continue
		}
		var s, tg int32
		var ok bool
		switch rng.IntN(3) {
		case 0:
			s, tg, ok = q.Take(Any, Any)
		case 1:
			s, tg, ok = q.Take(int32(rng.IntN(nSrc)), Any)
		case 2:
			src := int32(rng.IntN(nSrc))
			s, tg, ok = q.Take(src, want[src]) // the only matching one
		}
		if !ok {
			continue
		}
		if tg != want[s] {
			t.Fatalf("source %d: took tag %d, want %d", s, tg, want[s])
		}
		want[s]++
	}
	for q.Len() > 0 {
		s, tg, _ := q.Take(Any, Any)
		if tg != want[s] {
			t.Fatalf("drain: source %d: took tag %d, want %d", s, tg, want[s])
		}
		want[s]++
	}
	for s := range nSrc {
		if want[s] != next[s] {
			t.Fatalf("source %d: took %d notices, pushed %d", s, want[s], next[s])
		}
	}
}

func TestManyThenAllPatterns(t *testing.T) {
	// Thousands of notices from many sources are queued before any Take,
	// then taken with every combination of wildcards: each is taken exactly
	// once and each take returns the oldest match.
	const nSrc, nTag, total = 97, 23, 8000
	rng := rand.New(rand.NewPCG(11, 13))
	var q Queue
	type notice struct{ src, tag int32 }
	pushed := make([]notice, total)
	remaining := make(map[notice]int) // multiset of queued notices
	for i := range pushed {
		n := notice{int32(rng.IntN(nSrc)), int32(rng.IntN(nTag))}
		pushed[i] = n
		remaining[n]++
		q.Push(n.src, n.tag)
	}
	checkInvariants(t, &q)
	var r refQueue
	for _, n := range pushed {
		r.Push(n.src, n.tag)
	}
	taken := 0
	for kind := 0; q.Len() > 0; kind = (kind + 1) % 4 {
		var src, tag int32
		switch kind {
		case 0:
			src, tag = int32(rng.IntN(nSrc)), int32(rng.IntN(nTag))
		case 1:
			src, tag = int32(rng.IntN(nSrc)), Any
		case 2:
			src, tag = Any, int32(rng.IntN(nTag))
		case 3:
			src, tag = Any, Any
		}
		s, tg, ok := q.Take(src, tag)
		ws, wt, wok := r.Take(src, tag)
		if s != ws || tg != wt || ok != wok {
			t.Fatalf("Take(%d, %d) = (%d, %d, %v), want (%d, %d, %v)", src, tag, s, tg, ok, ws, wt, wok)
		}
		if !ok {
			continue
		}
		n := notice{s, tg}
		if remaining[n] == 0 {
			t.Fatalf("notice %v taken more times than pushed", n)
		}
		remaining[n]--
		taken++
		if taken%2000 == 0 {
			checkInvariants(t, &q)
		}
	}
	if taken != total {
		t.Fatalf("took %d notices, pushed %d", taken, total)
	}
	for n, c := range remaining {
		if c != 0 {
			t.Fatalf("notice %v: %d never taken", n, c)
		}
	}
	checkInvariants(t, &q)
}

func TestEveryPatternExactlyOnce(t *testing.T) {
	// For each wildcard combination alone, draining by that pattern family
	// takes every notice exactly once.
	const nSrc, nTag, total = 50, 40, 5000
	rng := rand.New(rand.NewPCG(3, 5))
	notices := make([][2]int32, total)
	for i := range notices {
		notices[i] = [2]int32{int32(rng.IntN(nSrc)), int32(rng.IntN(nTag))}
	}
	for kind := range 4 {
		t.Run([]string{"exact", "src", "tag", "any"}[kind], func(t *testing.T) {
			var q Queue
			for _, n := range notices {
				q.Push(n[0], n[1])
			}
			got := 0
			switch kind {
			case 0:
				for s := range int32(nSrc) {
					for tg := range int32(nTag) {
						for {
							gs, gt, ok := q.Take(s, tg)
							if !ok {
								break
							}
							if gs != s || gt != tg {
								t.Fatalf("Take(%d, %d) = (%d, %d)", s, tg, gs, gt)
							}
							got++
						}
					}
				}
			case 1:
				for s := range int32(nSrc) {
					for {
						gs, _, ok := q.Take(s, Any)
						if !ok {
							break
						}
						if gs != s {
							t.Fatalf("Take(%d, Any) got source %d", s, gs)
						}
						got++
					}
				}
			case 2:
				for tg := range int32(nTag) {
					for {
						_, gt, ok := q.Take(Any, tg)
						if !ok {
							break
						}
						if gt != tg {
							t.Fatalf("Take(Any, %d) got tag %d", tg, gt)
						}
						got++
					}
				}
			case 3:
				for i := 0; ; i++ {
					gs, gt, ok := q.Take(Any, Any)
					if !ok {
						break
					}
					if gs != notices[i][0] || gt != notices[i][1] {
						t.Fatalf("Take(Any, Any) #%d = (%d, %d), want %v", i, gs, gt, notices[i])
					}
					got++
				}
			}
			if got != total || q.Len() != 0 {
				t.Fatalf("took %d of %d, Len %d", got, total, q.Len())
			}
			checkInvariants(t, &q)
		})
	}
}

func TestResetKeepsMemory(t *testing.T) {
	var q Queue
	for i := range 1000 {
		q.Push(int32(i%10), int32(i%7))
	}
	nodes, heads := cap(q.nodes), cap(q.tags.h)
	q.Reset()
	checkInvariants(t, &q)
	if q.Len() != 0 {
		t.Fatalf("Len %d after Reset", q.Len())
	}
	if _, _, ok := q.Take(Any, Any); ok {
		t.Fatal("Take after Reset succeeded")
	}
	if cap(q.nodes) != nodes || cap(q.tags.h) != heads {
		t.Fatal("Reset dropped pooled memory")
	}
	allocs := testing.AllocsPerRun(10, func() {
		for i := range 1000 {
			q.Push(int32(i%10), int32(i%7))
		}
		q.Reset()
	})
	if allocs != 0 {
		t.Fatalf("refilling after Reset: %v allocs, want 0", allocs)
	}
	q.Push(4, 4)
	if s, tg, ok := q.Take(Any, 4); !ok || s != 4 || tg != 4 {
		t.Fatalf("Take = (%d, %d, %v)", s, tg, ok)
	}
	checkInvariants(t, &q)
}

func TestDistinctTagStreamBounded(t *testing.T) {
	// A stream of never-repeating tags must not grow the maps or slabs
	// without bound: empty heads beyond maxEmpty are recycled.
	var q Queue
	const live = 10
	tag := int32(0)
	for range live {
		q.Push(1, tag)
		tag++
	}
	for range 200000 {
		q.Push(int32(tag%3), tag)
		tag++
		if _, _, ok := q.Take(Any, Any); !ok {
			t.Fatal("Take failed")
		}
	}
	checkInvariants(t, &q)
	for _, x := range []*index{&q.tags, &q.pairs} {
		if len(x.m) > live+1+maxEmpty || len(x.h) > live+2+maxEmpty {
			t.Fatalf("index grew to %d keys, %d slots (live %d, maxEmpty %d)", len(x.m), len(x.h), live, maxEmpty)
		}
	}
	if len(q.nodes) > live+2 {
		t.Fatalf("node slab grew to %d", len(q.nodes))
	}
}

func TestSizes(t *testing.T) {
	// The package documentation quotes these sizes.
	if s := unsafe.Sizeof(node{}); s != 56 {
		t.Errorf("node is %d bytes, documented as 56", s)
	}
	if s := unsafe.Sizeof(head{}); s != 24 {
		t.Errorf("head is %d bytes, documented as 24", s)
	}
}
