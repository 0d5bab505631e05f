package match

import (
	"testing"
)

// background pushes n notices whose sources and tags differ from those used
// by the allocation tests and benchmarks (sources and tags >= 1000).
func background(q *Queue, n int) {
	for i := range n {
		q.Push(int32(1000+i%97), int32(1000+i%89))
	}
}

func TestAllocsSteadyState(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are not meaningful in short mode")
	}
	patterns := []struct {
		name     string
		src, tag int32
	}{
		{"exact", 3, 7},
		{"anySrc", Any, 7},
		{"anyTag", 3, Any},
		{"anyAny", Any, Any},
	}
	for _, p := range patterns {
		t.Run(p.name, func(t *testing.T) {
			var q Queue
			if p.src != Any || p.tag != Any {
				background(&q, 100) // Take(Any, Any) would take these
			}
			// Warm up: the keys exist and a node is on the free list.
			q.Push(3, 7)
			q.Take(p.src, p.tag)
			allocs := testing.AllocsPerRun(1000, func() {
				q.Push(3, 7)
				if s, tg, ok := q.Take(p.src, p.tag); !ok || s != 3 || tg != 7 {
					t.Fatalf("Take = (%d, %d, %v)", s, tg, ok)
				}
			})
			if allocs != 0 {
				t.Fatalf("Push+Take(%d, %d): %v allocs per run, want 0", p.src, p.tag, allocs)
			}
		})
	}

	t.Run("recurringKeys", func(t *testing.T) {
		// A bounded, varying population over a recurring key set: 16
		// sources x 64 tags = 1024 pairs, each emptied and refilled.
		var q Queue
		background(&q, 100)
		step := 0
		run := func() {
			for range 8 {
				s, tg := int32(step%16), int32((step*7)%64)
				q.Push(s, tg)
				step++
			}
			q.Take(int32(step%16), Any)
			q.Take(Any, int32(step%64))
			for q.Len() > 100+16 {
				q.Take(Any, Any)
			}
			for _, p := range [][2]int32{{Any, Any}, {int32(step % 16), int32(step % 64)}} {
				q.Take(p[0], p[1])
			}
		}
		for range 10000 { // warm-up: every key and the peak node count seen
			run()
		}
		if allocs := testing.AllocsPerRun(1000, run); allocs != 0 {
			t.Fatalf("%v allocs per run, want 0", allocs)
		}
		checkInvariants(t, &q)
	})

	t.Run("distinctTags", func(t *testing.T) {
		// Never-repeating tags: empty heads are evicted and their slots
		// and map entries reused; after warm-up nothing is allocated.
		var q Queue
		background(&q, 100)
		tag := int32(1 << 20)
		run := func() {
			q.Push(5, tag)
			tag++
			q.Take(Any, tag-1)
		}
		for range 100000 {
			run()
		}
		if allocs := testing.AllocsPerRun(100000, run); allocs != 0 {
			t.Fatalf("%v allocs per run, want 0", allocs)
		}
		checkInvariants(t, &q)
	})
}
