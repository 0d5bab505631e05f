package tcp

import "sync/atomic"

// Count is a number of frames and the bytes they took on the wire,
// headers included.
type Count struct {
	Frames, Bytes uint64
}

// Stats is a snapshot of an endpoint's frame counters, by kind. Every
// frame is counted once when it is written and once when it is read, by
// the endpoints at either end; the handshake is not counted.
type Stats struct {
	Sent, Received map[Kind]Count
}

// DataFrames returns the number of frames sent that carry or request
// data: puts, gets, accumulates, compare-and-swaps and active messages.
func (s Stats) DataFrames() uint64 {
	var n uint64
	for _, k := range []Kind{KindPut, KindGet, KindAccumulate, KindCompareSwap, KindAM} {
		n += s.Sent[k].Frames
	}
	return n
}

// counters are an endpoint's frame counters.
type counters struct {
	out, in [numKinds]struct{ frames, bytes atomic.Uint64 }
}

func (c *counters) sent(k Kind, n int) {
	c.out[k].frames.Add(1)
	c.out[k].bytes.Add(uint64(n))
}

func (c *counters) received(k Kind, n int) {
	c.in[k].frames.Add(1)
	c.in[k].bytes.Add(uint64(n))
}

// Stats returns a snapshot of the endpoint's frame counters; kinds with no
// frame are left out.
func (e *Endpoint) Stats() Stats {
	s := Stats{Sent: make(map[Kind]Count), Received: make(map[Kind]Count)}
	for k := Kind(1); k < numKinds; k++ {
		if n := e.stats.out[k].frames.Load(); n > 0 {
			s.Sent[k] = Count{n, e.stats.out[k].bytes.Load()}
		}
		if n := e.stats.in[k].frames.Load(); n > 0 {
			s.Received[k] = Count{n, e.stats.in[k].bytes.Load()}
		}
	}
	return s
}
