// Package match is the matching engine for notices of Notified Access: a
// pure data structure that stores (source, tag) notices in arrival order and
// hands out the oldest one matching a pattern in which the source, the tag
// or both may be the wildcard Any. It knows nothing about windows,
// transports or goroutines.
//
// # Structure
//
// Every queued notice lives in one node of a slab (a slice of nodes
// addressed by int32 indices, index 0 meaning "none"); removed nodes go to a
// free list and are reused by later pushes. Each node is linked, intrusively,
// into four doubly-linked lists, all kept in arrival order (a push appends at
// the tail of each):
//
//   - the global list of all notices;
//   - the list of its source, whose head and tail are stored in a slice
//     indexed by the source (sources are small dense ranks), grown on demand;
//   - the list of its tag, whose head and tail are found through a map from
//     tag to a slot in a slab of list heads;
//   - the list of its (source, tag) pair, found through a second such map.
//
// Because every list is in arrival order, the oldest notice matching a
// pattern is the first node of the one list that the pattern selects:
//
//	Take(Any, Any)  head of the global list          O(1)
//	Take(s, Any)    head of source s's list          O(1), one slice index
//	Take(Any, t)    head of tag t's list             O(1), one map lookup
//	Take(s, t)      head of the (s, t) list          O(1), one map lookup
//
// No pattern scans unrelated notices, whatever their number; a Take that
// finds nothing costs the lookup alone. Removing a node unlinks it from its
// four lists in O(1): the node records the slots of its tag and pair list
// heads, so no further lookup is needed. Push appends to the four lists
// after one lookup in each map. Each map is fronted by a one-entry cache of
// the last key found, so a notice pushed and then taken with the same exact
// pattern costs one map lookup in each map, not two in the pair map. A
// match thus touches the map slot, the list head, the node and the
// neighbours being relinked, which with few queued notices are mostly the
// same few cache lines. Each node also carries a global sequence number (its
// arrival rank) that orders every list; it is what the invariant checks of
// the tests verify.
//
// # Memory
//
// A node takes 56 bytes and a list head slot 24 bytes plus its map entry. A
// list head whose list becomes empty stays in its map, so a recurring tag
// or pair costs no map insertion or deletion. Empty heads are kept in
// least-recently-emptied order; once more than maxEmpty (1024) of them exist
// in a map, the oldest is deleted from the map and its slot recycled, so a
// stream of distinct tags keeps each map bounded by the number of keys with
// queued notices plus 1024 (such a stream pays a map insertion and deletion
// per notice, but still allocates nothing once warm). The per-source slice
// is as long as the largest source pushed; sources must be below 1<<20.
//
// After warm-up, with a bounded number of queued notices, Push and Take
// allocate nothing: nodes and list heads come from free lists and map
// entries are reused. Reset drops all notices but keeps the slabs and the
// maps' storage for reuse; it takes time proportional to the largest source
// and the number of keys seen.
package match

import "math"

// Any matches every source or every tag.
const Any int32 = -1

// maxSource bounds the sources accepted by Push: the per-source list heads
// are a slice indexed by source.
const maxSource = 1 << 20

// maxEmpty is the number of empty list heads a keyed index keeps for reuse
// before it starts deleting the least recently emptied ones. It is a
// variable only so that tests can exercise eviction with few keys; it must
// not change while a Queue holds empty heads.
var maxEmpty = 1024

// Link slots of a node, one per list it belongs to.
const (
	kGlobal = iota
	kSource
	kTag
	kPair
	nKinds
)

// link is a node's position in one list (node indices, 0 = none).
type link struct{ prev, next int32 }

// list is the head and tail of one list (node indices, 0 = none).
type list struct{ first, last int32 }

// node holds one queued notice, or, while on the free list, the index of the
// next free node in links[kGlobal].next.
type node struct {
	seq         uint64 // global arrival rank, strictly increasing
	src, tag    int32
	tagH, pairH int32 // slots of the tag and pair list heads
	links       [nKinds]link
}

// head is a slot of a keyed index: the list of one key, and the links of the
// slot in the index's empty-head order (while the list is empty) or in its
// free list (next only, while the slot is unused).
type head struct {
	l          list
	prev, next int32
	key        uint64
}

// index maps keys (tags, or source/tag pairs) to list heads stored in a
// slab. Slot 0 of the slab is unused so that 0 means "none".
type index struct {
	m      map[uint64]int32
	h      []head
	free   int32 // first unused slot
	oldest int32 // least recently emptied head in m
	newest int32 // most recently emptied head in m
	nEmpty int   // number of empty heads in m
	// One-entry lookup cache: the slot of lastKey, or 0. A notice is
	// usually pushed and then taken with the same key.
	lastKey  uint64
	lastSlot int32
}

// Queue holds notices (source, tag) in arrival order and hands out the
// oldest one matching a (source, tag) pattern with wildcards. The zero
// value is an empty queue ready to use. A Queue is not safe for concurrent
// use: its owner serializes Push and Take.
type Queue struct {
	nodes []node // slab; nodes[0] is unused
	free  int32  // first free node
	n     int    // queued notices
	seq   uint64 // sequence number of the last push
	all   list   // global list
	srcs  []list // per-source lists, indexed by source
	tags  index  // per-tag lists, key uint32(tag)
	pairs index  // per-(source, tag) lists, key pairKey(src, tag)
}

func pairKey(src, tag int32) uint64 { return uint64(uint32(src))<<32 | uint64(uint32(tag)) }

// Push appends the notice (src, tag). It panics if src is negative or not
// below 1<<20, or if tag is negative.
func (q *Queue) Push(src, tag int32) {
	if uint32(src) >= maxSource || tag < 0 {
		panic("match: Push of an invalid notice (source must be in [0, 1<<20), tag >= 0)")
	}
	i := q.alloc()
	q.seq++
	th := q.tags.acquire(uint64(tag))
	ph := q.pairs.acquire(pairKey(src, tag))
	if int(src) >= len(q.srcs) {
		q.growSources(int(src) + 1)
	}
	n := &q.nodes[i]
	*n = node{seq: q.seq, src: src, tag: tag, tagH: th, pairH: ph}
	q.linkTail(&q.all, i, kGlobal)
	q.linkTail(&q.srcs[src], i, kSource)
	q.linkTail(&q.tags.h[th].l, i, kTag)
	q.linkTail(&q.pairs.h[ph].l, i, kPair)
	q.n++
}

// Take removes and returns the oldest queued notice (earliest Push) whose
// source is src (or any source if src is Any) and whose tag is tag (or any
// tag if tag is Any). ok is false, and nothing is removed, if no queued
// notice matches; a pattern value below Any matches nothing.
func (q *Queue) Take(src, tag int32) (gotSrc, gotTag int32, ok bool) {
	i := q.find(src, tag)
	if i == 0 {
		return 0, 0, false
	}
	n := &q.nodes[i]
	gotSrc, gotTag = n.src, n.tag
	q.remove(i)
	return gotSrc, gotTag, true
}

// Peek returns the notice that Take(src, tag) would return, without
// removing it.
func (q *Queue) Peek(src, tag int32) (gotSrc, gotTag int32, ok bool) {
	i := q.find(src, tag)
	if i == 0 {
		return 0, 0, false
	}
	n := &q.nodes[i]
	return n.src, n.tag, true
}

// Len returns the number of queued notices.
func (q *Queue) Len() int { return q.n }

// Reset drops all queued notices. The memory of the node and list-head
// slabs and of the maps is kept for reuse.
func (q *Queue) Reset() {
	if q.nodes != nil {
		q.nodes = q.nodes[:1]
	}
	q.free = 0
	q.n = 0
	q.all = list{}
	clear(q.srcs)
	q.tags.reset()
	q.pairs.reset()
	// q.seq keeps counting: sequence numbers stay unique over the queue's life.
}

// find returns the index of the oldest node matching (src, tag), or 0.
func (q *Queue) find(src, tag int32) int32 {
	if tag == Any {
		if src == Any {
			return q.all.first
		}
		if uint32(src) < uint32(len(q.srcs)) {
			return q.srcs[src].first
		}
		return 0
	}
	if tag < 0 {
		return 0
	}
	if src == Any {
		return q.tags.first(uint64(tag))
	}
	if src < 0 {
		return 0
	}
	return q.pairs.first(pairKey(src, tag))
}

// alloc returns the index of an unused node, from the free list or by
// growing the slab.
func (q *Queue) alloc() int32 {
	if i := q.free; i != 0 {
		q.free = q.nodes[i].links[kGlobal].next
		return i
	}
	if q.nodes == nil {
		q.nodes = make([]node, 1, 16)
	}
	if len(q.nodes) == math.MaxInt32 {
		panic("match: too many queued notices")
	}
	q.nodes = append(q.nodes, node{})
	return int32(len(q.nodes) - 1)
}

func (q *Queue) growSources(n int) {
	if n <= cap(q.srcs) {
		q.srcs = q.srcs[:n]
		return
	}
	c := max(n, 2*cap(q.srcs), 8)
	s := make([]list, n, min(c, maxSource))
	copy(s, q.srcs)
	q.srcs = s
}

// remove unlinks node i from its four lists and puts it on the free list.
func (q *Queue) remove(i int32) {
	n := &q.nodes[i]
	th, ph := n.tagH, n.pairH
	q.unlink(&q.all, i, kGlobal)
	q.unlink(&q.srcs[n.src], i, kSource)
	q.unlink(&q.tags.h[th].l, i, kTag)
	q.unlink(&q.pairs.h[ph].l, i, kPair)
	if q.tags.h[th].l.first == 0 {
		q.tags.emptied(th)
	}
	if q.pairs.h[ph].l.first == 0 {
		q.pairs.emptied(ph)
	}
	n.links[kGlobal].next = q.free
	q.free = i
	q.n--
}

// linkTail appends node i to l through its link slot k.
func (q *Queue) linkTail(l *list, i int32, k int) {
	last := l.last
	q.nodes[i].links[k] = link{prev: last}
	if last != 0 {
		q.nodes[last].links[k].next = i
	} else {
		l.first = i
	}
	l.last = i
}

// unlink removes node i from l, to which it is linked through slot k.
func (q *Queue) unlink(l *list, i int32, k int) {
	lk := q.nodes[i].links[k]
	if lk.prev != 0 {
		q.nodes[lk.prev].links[k].next = lk.next
	} else {
		l.first = lk.next
	}
	if lk.next != 0 {
		q.nodes[lk.next].links[k].prev = lk.prev
	} else {
		l.last = lk.prev
	}
}

// first returns the first node of key's list, or 0.
func (x *index) first(key uint64) int32 {
	if s := x.lookup(key); s != 0 {
		return x.h[s].l.first
	}
	return 0
}

// lookup returns the slot of key's list head, or 0.
func (x *index) lookup(key uint64) int32 {
	if key == x.lastKey && x.lastSlot != 0 {
		return x.lastSlot
	}
	s := x.m[key]
	if s != 0 {
		x.lastKey, x.lastSlot = key, s
	}
	return s
}

// acquire returns the slot of key's list head, creating it if needed, for a
// node about to be appended: an empty head leaves the empty-head order.
func (x *index) acquire(key uint64) int32 {
	s := x.lookup(key)
	if s != 0 {
		if x.h[s].l.first == 0 {
			x.unlinkEmpty(s)
		}
		return s
	}
	if s = x.free; s != 0 {
		x.free = x.h[s].next
	} else {
		if x.h == nil {
			x.h = make([]head, 1, 16)
		}
		if len(x.h) == math.MaxInt32 {
			panic("match: too many distinct keys")
		}
		x.h = append(x.h, head{})
		s = int32(len(x.h) - 1)
	}
	x.h[s] = head{key: key}
	if x.m == nil {
		x.m = make(map[uint64]int32)
	}
	x.m[key] = s
	x.lastKey, x.lastSlot = key, s
	return s
}

// emptied records that the list of slot s has become empty. If too many
// empty heads are kept, the least recently emptied one is deleted.
func (x *index) emptied(s int32) {
	h := &x.h[s]
	h.prev, h.next = x.newest, 0
	if x.newest != 0 {
		x.h[x.newest].next = s
	} else {
		x.oldest = s
	}
	x.newest = s
	x.nEmpty++
	if x.nEmpty > maxEmpty {
		old := x.oldest
		x.unlinkEmpty(old)
		delete(x.m, x.h[old].key)
		if x.lastSlot == old {
			x.lastSlot = 0
		}
		x.h[old] = head{next: x.free}
		x.free = old
	}
}

// unlinkEmpty removes the empty head s from the empty-head order.
func (x *index) unlinkEmpty(s int32) {
	h := &x.h[s]
	if h.prev != 0 {
		x.h[h.prev].next = h.next
	} else {
		x.oldest = h.next
	}
	if h.next != 0 {
		x.h[h.next].prev = h.prev
	} else {
		x.newest = h.prev
	}
	h.prev, h.next = 0, 0
	x.nEmpty--
}

func (x *index) reset() {
	clear(x.m)
	if x.h != nil {
		x.h = x.h[:1]
	}
	x.free, x.oldest, x.newest, x.nEmpty = 0, 0, 0, 0
	x.lastSlot = 0
}
