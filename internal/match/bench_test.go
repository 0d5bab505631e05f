package match

import (
	"fmt"
	"testing"
)

// BenchmarkPushTakeExact measures a Push immediately matched by an exact
// Take, with n unrelated notices (other sources and tags) queued.
func BenchmarkPushTakeExact(b *testing.B) {
	for _, n := range []int{0, 100, 10000} {
		b.Run(fmt.Sprintf("unrelated=%d", n), func(b *testing.B) {
			var q Queue
			background(&q, n)
			q.Push(3, 7)
			q.Take(3, 7)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				q.Push(3, 7)
				if _, _, ok := q.Take(3, 7); !ok {
					b.Fatal("no match")
				}
			}
		})
	}
}

// BenchmarkPushTakeExactRotating is Push+Take exact over 8 sources x 128
// tags in rotation, so that map lookups do not always hit the same slot.
func BenchmarkPushTakeExactRotating(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("unrelated=%d", n), func(b *testing.B) {
			var q Queue
			background(&q, n)
			for i := range 1024 {
				q.Push(int32(i%8), int32(i/8))
				q.Take(int32(i%8), int32(i/8))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				s, tg := int32(i%8), int32((i/8)%128)
				q.Push(s, tg)
				if _, _, ok := q.Take(s, tg); !ok {
					b.Fatal("no match")
				}
			}
		})
	}
}

// BenchmarkTakeAnyAny measures Push+Take(Any, Any) with a FIFO of 10000
// queued notices (the oldest is taken, a new one appended).
func BenchmarkTakeAnyAny(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			var q Queue
			background(&q, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				q.Push(int32(i%64), int32(i%16))
				if _, _, ok := q.Take(Any, Any); !ok {
					b.Fatal("no match")
				}
			}
		})
	}
}

// BenchmarkTakeSrcAny measures Push+Take(s, Any) with 10000 queued notices
// of other sources.
func BenchmarkTakeSrcAny(b *testing.B) {
	var q Queue
	background(&q, 10000)
	q.Push(3, 0)
	q.Take(3, Any)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q.Push(3, int32(i%16))
		if _, _, ok := q.Take(3, Any); !ok {
			b.Fatal("no match")
		}
	}
}

// BenchmarkTakeAnyTag measures Push+Take(Any, t) with 10000 queued notices
// of other tags.
func BenchmarkTakeAnyTag(b *testing.B) {
	var q Queue
	background(&q, 10000)
	q.Push(0, 7)
	q.Take(Any, 7)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q.Push(int32(i%16), 7)
		if _, _, ok := q.Take(Any, 7); !ok {
			b.Fatal("no match")
		}
	}
}

// BenchmarkTakeMiss measures a Take that finds nothing, with 10000 queued
// notices of other sources and tags.
func BenchmarkTakeMiss(b *testing.B) {
	var q Queue
	background(&q, 10000)
	pats := [][2]int32{{3, 7}, {3, Any}, {Any, 7}}
	for _, p := range pats {
		b.Run(fmt.Sprintf("src=%d,tag=%d", p[0], p[1]), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, _, ok := q.Take(p[0], p[1]); ok {
					b.Fatal("unexpected match")
				}
			}
		})
	}
}

// BenchmarkBurst pushes 64 notices from 8 sources, then takes them with
// exact patterns in an order different from arrival.
func BenchmarkBurst(b *testing.B) {
	var q Queue
	b.ReportAllocs()
	for range b.N {
		for i := range int32(64) {
			q.Push(i%8, i/8)
		}
		for i := int32(63); i >= 0; i-- {
			if _, _, ok := q.Take(i%8, i/8); !ok {
				b.Fatal("no match")
			}
		}
	}
}

// BenchmarkDistinctTags measures Push+Take exact when every notice has a
// new tag: list heads are created, emptied and evicted (maxEmpty) in a
// steady stream, so each operation also inserts and deletes map entries.
func BenchmarkDistinctTags(b *testing.B) {
	var q Queue
	background(&q, 100)
	tag := int32(1 << 20)
	for range 4 * maxEmpty { // reach the eviction regime
		q.Push(5, tag)
		q.Take(5, tag)
		tag++
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		q.Push(5, tag)
		if _, _, ok := q.Take(5, tag); !ok {
			b.Fatal("no match")
		}
		tag++
		if tag < 0 {
			tag = 1 << 20
		}
	}
}
