package narma_test

// The rooted, all-to-all and prefix collectives over 1..7 ranks (Reduce,
// Gather(v), Scatter(v), Alltoall(v), Scan, Exscan), their argument
// errors, and the typed two-sided calls.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// TestReduceEveryRoot: Reduce to every root leaves the combination at the
// root only (the others' recv, and every send, untouched), for integer
// sums and float maxima.
func TestReduceEveryRoot(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			for root := range n {
				send := []int64{int64(me + 1), int64(-me), int64(root)}
				fsend := []float64{float64(me) * 1.5, -float64(me)}
				recv := []int64{-7, -7, -7}
				frecv := []float64{-7, -7}
				if err := narma.Reduce(ctx, c, send, recv, narma.Sum, root); err != nil {
					return err
				}
				if err := narma.Reduce(ctx, c, fsend, frecv, narma.Max, root); err != nil {
					return err
				}
				if !slices.Equal(send, []int64{int64(me + 1), int64(-me), int64(root)}) {
					return fmt.Errorf("Reduce to %d changed send: %v", root, send)
				}
				want, fwant := []int64{-7, -7, -7}, []float64{-7, -7}
				if me == root {
					want = []int64{int64(n * (n + 1) / 2), int64(-n * (n - 1) / 2), int64(n * root)}
					fwant = []float64{float64(n-1) * 1.5, 0}
				}
				if !slices.Equal(recv, want) || !slices.Equal(frecv, fwant) {
					return fmt.Errorf("Reduce to %d: %v and %v, want %v and %v", root, recv, frecv, want, fwant)
				}
			}
			// Non-roots may pass no recv.
			var out []int32
			if me == 0 {
				out = make([]int32, 1)
			}
			if err := narma.Reduce(ctx, c, []int32{1}, out, narma.Sum, 0); err != nil {
				return err
			}
			if me == 0 && out[0] != int32(n) {
				return fmt.Errorf("Reduce with nil recv elsewhere: %d, want %d", out[0], n)
			}
			return nil
		})
	})
}

// TestGatherScatter: Gather and Scatter from every root move each
// rank's block to its place and back; Gatherv and Scatterv do the same
// with blocks of different lengths, packed and at displacements that
// leave gaps (untouched).
func TestGatherScatter(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			for root := range n {
				mine := []int32{int32(me*10 + root), int32(me*10 + root + 1)}
				all := make([]int32, 2*n)
				if err := narma.Gather(ctx, c, mine, all, root); err != nil {
					return err
				}
				if me == root {
					for r := range n {
						if all[2*r] != int32(r*10+root) || all[2*r+1] != int32(r*10+root+1) {
							return fmt.Errorf("Gather to %d: %v", root, all)
						}
					}
					for i := range all {
						all[i] = -all[i]
					}
				}
				back := make([]int32, 2)
				if err := narma.Scatter(ctx, c, all, back, root); err != nil {
					return err
				}
				if back[0] != -mine[0] || back[1] != -mine[1] {
					return fmt.Errorf("Scatter from %d: %v, want the negation of %v", root, back, mine)
				}
			}
			// Rank r gives r+1 elements; the root keeps a gap of one
			// element before each block.
			counts := make([]int, n)
			displs := make([]int, n)
			total := 0
			for r := range n {
				counts[r] = r + 1
				displs[r] = total + 1
				total += r + 2
			}
			mine := make([]float64, me+1)
			for i := range mine {
				mine[i] = float64(me) + float64(i)/8
			}
			root := n - 1
			var gapped, packed []float64
			if me == root {
				gapped = slices.Repeat([]float64{-1}, total)
				packed = make([]float64, total-n)
			}
			if err := narma.Gatherv(ctx, c, mine, gapped, counts, displs, root); err != nil {
				return err
			}
			if err := narma.Gatherv(ctx, c, mine, packed, counts, nil, root); err != nil {
				return err
			}
			if me == root {
				at := 0
				for r := range n {
					if gapped[displs[r]-1] != -1 {
						return fmt.Errorf("Gatherv wrote the gap before rank %d's block: %v", r, gapped)
					}
					for i := range counts[r] {
						want := float64(r) + float64(i)/8
						if gapped[displs[r]+i] != want || packed[at+i] != want {
							return fmt.Errorf("Gatherv: rank %d element %d: %v and %v, want %v", r, i, gapped[displs[r]+i], packed[at+i], want)
						}
					}
					at += counts[r]
				}
				for i := range gapped {
					gapped[i] *= 2
				}
			}
			back := make([]float64, me+1)
			if err := narma.Scatterv(ctx, c, gapped, counts, displs, back, root); err != nil {
				return err
			}
			for i := range back {
				if back[i] != 2*mine[i] {
					return fmt.Errorf("Scatterv: %v, want twice %v", back, mine)
				}
			}
			return nil
		})
	})
}

// TestAlltoall: Alltoall delivers block d of rank s to block s of rank d;
// Alltoallv does so with blocks whose lengths depend on both ranks
// (some empty), packed on the sending side and at displacements on the
// receiving one.
func TestAlltoall(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			send := make([]int64, 2*n)
			for d := range n {
				send[2*d], send[2*d+1] = int64(me*100+d*10), int64(me*100+d*10+1)
			}
			recv := make([]int64, 2*n)
			if err := narma.Alltoall(ctx, c, send, recv); err != nil {
				return err
			}
			for s := range n {
				if recv[2*s] != int64(s*100+me*10) || recv[2*s+1] != int64(s*100+me*10+1) {
					return fmt.Errorf("Alltoall: %v", recv)
				}
			}
			length := func(s, d int) int { return (s + d) % 3 }
			var vsend []uint16
			scounts := make([]int, n)
			for d := range n {
				scounts[d] = length(me, d)
				for i := range scounts[d] {
					vsend = append(vsend, uint16(me*100+d*10+i))
				}
			}
			rcounts, rdispls := make([]int, n), make([]int, n)
			at := 0
			for s := range n {
				rcounts[s], rdispls[s] = length(s, me), at
				at += length(s, me) + 1
			}
			vrecv := slices.Repeat([]uint16{9999}, at)
			if err := narma.Alltoallv(ctx, c, vsend, scounts, nil, vrecv, rcounts, rdispls); err != nil {
				return err
			}
			for s := range n {
				for i := range rcounts[s] {
					if got, want := vrecv[rdispls[s]+i], uint16(s*100+me*10+i); got != want {
						return fmt.Errorf("Alltoallv: element %d from rank %d is %d, want %d", i, s, got, want)
					}
				}
				if vrecv[rdispls[s]+rcounts[s]] != 9999 {
					return fmt.Errorf("Alltoallv wrote past the block from rank %d: %v", s, vrecv)
				}
			}
			return nil
		})
	})
}

// TestScan: Scan gives each rank the combination of ranks 0 to itself,
// Exscan of ranks 0 to the one before (rank 0's recv untouched), for
// integer sums, products and float minima.
func TestScan(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			send := []int64{int64(me + 1), 2}
			in, ex := make([]int64, 2), []int64{-5, -5}
			if err := narma.Scan(ctx, c, send, in, narma.Sum); err != nil {
				return err
			}
			if err := narma.Exscan(ctx, c, send, ex, narma.Sum); err != nil {
				return err
			}
			if want := []int64{int64((me + 1) * (me + 2) / 2), int64(2 * (me + 1))}; !slices.Equal(in, want) {
				return fmt.Errorf("Scan Sum: %v, want %v", in, want)
			}
			wantEx := []int64{int64(me * (me + 1) / 2), int64(2 * me)}
			if me == 0 {
				wantEx = []int64{-5, -5}
			}
			if !slices.Equal(ex, wantEx) {
				return fmt.Errorf("Exscan Sum: %v, want %v", ex, wantEx)
			}
			prod := make([]int32, 1)
			if err := narma.Scan(ctx, c, []int32{2}, prod, narma.Prod); err != nil {
				return err
			}
			if prod[0] != 1<<(me+1) {
				return fmt.Errorf("Scan Prod: %d, want %d", prod[0], 1<<(me+1))
			}
			fmin := make([]float32, 1)
			if err := narma.Scan(ctx, c, []float32{float32(10 - me)}, fmin, narma.Min); err != nil {
				return err
			}
			if fmin[0] != float32(10-me) {
				return fmt.Errorf("Scan Min: %v, want %v", fmin[0], 10-me)
			}
			return nil
		})
	})
}

// TestMoreCollectiveErrors: arguments that every rank gets wrong are
// refused with the sentinel and the call's name, and write nothing; a
// root whose blocks differ from what a rank sends reports
// ErrCollective.
func TestMoreCollectiveErrors(t *testing.T) {
	const n = 3
	run(t, n, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		k := newChecks(c)
		one := []int64{1}
		k.isIn("Reduce to rank n", narma.Reduce(ctx, c, one, one, narma.Sum, n), narma.ErrRank, "Reduce", fmt.Sprint(n))
		k.is("Reduce Band on float64", narma.Reduce(ctx, c, []float64{1}, []float64{0}, narma.Band, 0), narma.ErrOp, "Reduce")
		k.is("Gather to rank -1", narma.Gather(ctx, c, one, make([]int64, n), -1), narma.ErrRank, "Gather")
		k.is("Scatter from rank n", narma.Scatter(ctx, c, make([]int64, n), one, n), narma.ErrRank, "Scatter")
		k.is("Gatherv to rank n", narma.Gatherv(ctx, c, one, nil, nil, nil, n), narma.ErrRank, "Gatherv")
		recv := []int64{-1, -1, -1, -1}
		k.is("Alltoall of 4 elements over 3 ranks", narma.Alltoall(ctx, c, []int64{1, 2, 3, 4}, recv), narma.ErrLayout, "Alltoall")
		k.is("Alltoallv with 2 counts", narma.Alltoallv(ctx, c, one, []int{1, 0}, nil, recv, []int{1, 0, 0}, nil), narma.ErrLayout, "Alltoallv")
		k.is("Alltoallv with a negative count", narma.Alltoallv(ctx, c, one, []int{-1, 1, 1}, nil, recv, []int{1, 1, 1}, nil), narma.ErrLayout, "Alltoallv")
		k.is("Alltoallv past the recv buffer", narma.Alltoallv(ctx, c, make([]int64, 3), []int{1, 1, 1}, nil, recv, []int{1, 1, 1}, []int{0, 1, 4}), narma.ErrLayout, "Alltoallv")
		k.is("Alltoallv sending itself other than it expects", narma.Alltoallv(ctx, c, make([]int64, 3), []int{1, 1, 1}, nil, recv, []int{2, 2, 2}, nil), narma.ErrLayout, "Alltoallv")
		k.is("Alltoallv with an overflowing count", narma.Alltoallv(ctx, c, one, []int{1 << 62, 0, 0}, nil, recv, []int{1, 0, 0}, nil), narma.ErrLayout, "Alltoallv")
		k.is("Scan with NoOp", narma.Scan(ctx, c, one, make([]int64, 1), narma.NoOp), narma.ErrOp, "Scan")
		k.is("Exscan recv shorter than send", narma.Exscan(ctx, c, []int64{1, 2}, recv[:1], narma.Sum), narma.ErrLayout, "Exscan")
		if !slices.Equal(recv, []int64{-1, -1, -1, -1}) {
			k.errorf("refused collectives wrote recv: %v", recv)
		}
		// The refused calls left nothing behind: a valid collective still
		// works.
		sum := make([]int64, 1)
		if err := narma.Scan(ctx, c, one, sum, narma.Sum); err != nil {
			return err
		}
		if sum[0] != int64(me+1) {
			k.errorf("Scan after refused collectives: %d, want %d", sum[0], me+1)
		}
		// Rank 2 sends two elements where the root's counts say one.
		mine := []int64{int64(me)}
		if me == 2 {
			mine = []int64{2, 2}
		}
		var all []int64
		if me == 0 {
			all = make([]int64, n)
		}
		err := narma.Gatherv(ctx, c, mine, all, []int{1, 1, 1}, nil, 0)
		if me == 0 {
			k.is("Gatherv with a longer block than counts says", err, narma.ErrCollective, "Gatherv")
		} else {
			k.ok("Gatherv at a sender", err)
		}
		return k.err()
	})
}

// TestTypedSendRecv: Send, Recv, Isend and Irecv over typed slices move
// the elements, and Status.Count is in bytes.
func TestTypedSendRecv(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		if me == 0 {
			if err := narma.Send(ctx, c, []float64{1.5, -2}, 1, 3); err != nil {
				return err
			}
			r, err := narma.Isend(ctx, c, []int16{7, 8, 9}, 1, 4)
			if err != nil {
				return err
			}
			_, err = r.Wait(ctx)
			return err
		}
		f := make([]float64, 2)
		st, err := narma.Recv(ctx, c, f, 0, 3)
		if err != nil {
			return err
		}
		if !slices.Equal(f, []float64{1.5, -2}) || st.Count != 16 || st.Source != 0 || st.Tag != 3 {
			return fmt.Errorf("Recv: %v, status %+v", f, st)
		}
		s := make([]int16, 3)
		r, err := narma.Irecv(c, s, 0, 4)
		if err != nil {
			return err
		}
		if st, err = r.Wait(ctx); err != nil {
			return err
		}
		if !slices.Equal(s, []int16{7, 8, 9}) || st.Count != 6 {
			return fmt.Errorf("Irecv: %v, status %+v", s, st)
		}
		return nil
	})
}

// TestCollectiveErrorRecovery: a collective that one rank refuses (a
// root's recv or counts, one rank's Alltoall or Scan buffers) fails there
// and with ErrCollective where the refusal shows, nobody waits for ever,
// and the next collective of the same kind gets fresh data: nothing of
// the failed one is left to be matched.
func TestCollectiveErrorRecovery(t *testing.T) {
	const n = 4
	run(t, n, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		k := newChecks(c)
		mine := []int64{int64(me)}
		// A root whose recv is too short.
		short := make([]int64, 1)
		err := narma.Gather(ctx, c, []int64{-1}, short, 1)
		if me == 1 {
			k.is("Gather into a short recv at the root", err, narma.ErrLayout, "Gather")
		} else {
			k.ok("Gather at a sender", err)
		}
		// A root whose counts are missing: the senders' blocks are taken in
		// and dropped.
		var all []int64
		if me == 2 {
			all = make([]int64, n)
		}
		err = narma.Gatherv(ctx, c, []int64{-2}, all, nil, nil, 2)
		if me == 2 {
			k.is("Gatherv without counts", err, narma.ErrLayout, "Gatherv")
		} else {
			k.ok("Gatherv at a sender", err)
		}
		// A root whose send is too short: every other rank is told.
		got := []int64{-9}
		err = narma.Scatter(ctx, c, make([]int64, n-1), got, 0)
		if me == 0 {
			k.is("Scatter of a short send", err, narma.ErrLayout, "Scatter")
		} else {
			k.is("Scatter from a root that refused", err, narma.ErrCollective, "Scatter")
		}
		// One rank's Alltoall buffers are wrong: it is refused, the ranks
		// that expected its block hear of it.
		send, recv := make([]int64, n), make([]int64, n)
		if me == 3 {
			recv = recv[:n-1]
		}
		err = narma.Alltoall(ctx, c, send, recv)
		if me == 3 {
			k.is("Alltoall with a short recv", err, narma.ErrLayout, "Alltoall")
		} else {
			k.is("Alltoall with a rank that refused", err, narma.ErrCollective, "Alltoall")
		}
		// Rank 1's Scan recv is wrong: ranks above it are told, rank 0 is not.
		out := make([]int64, 1)
		if me == 1 {
			out = nil
		}
		err = narma.Scan(ctx, c, mine, out, narma.Sum)
		switch {
		case me == 0:
			k.ok("Scan below the refusing rank", err)
		case me == 1:
			k.is("Scan into a short recv", err, narma.ErrLayout, "Scan")
		default:
			k.is("Scan above a rank that refused", err, narma.ErrCollective, "Scan")
		}
		// Each kind again, valid: fresh data everywhere.
		var gathered []int64
		if me == 1 {
			gathered = make([]int64, n)
		}
		k.ok("Gather after a failed one", narma.Gather(ctx, c, mine, gathered, 1))
		if me == 1 && !slices.Equal(gathered, []int64{0, 1, 2, 3}) {
			k.errorf("Gather after a failed one: %v", gathered)
		}
		if me == 2 {
			all = make([]int64, n)
		}
		k.ok("Gatherv after a failed one", narma.Gatherv(ctx, c, mine, all, []int{1, 1, 1, 1}, nil, 2))
		if me == 2 && !slices.Equal(all, []int64{0, 1, 2, 3}) {
			k.errorf("Gatherv after a failed one: %v", all)
		}
		k.ok("Scatter after a failed one", narma.Scatter(ctx, c, []int64{10, 11, 12, 13}, got, 0))
		if got[0] != int64(10+me) {
			k.errorf("Scatter after a failed one: %d, want %d", got[0], 10+me)
		}
		for d := range send {
			send[d] = int64(me*10 + d)
		}
		recv = make([]int64, n)
		k.ok("Alltoall after a failed one", narma.Alltoall(ctx, c, send, recv))
		for s := range recv {
			if recv[s] != int64(s*10+me) {
				k.errorf("Alltoall after a failed one: %v", recv)
				break
			}
		}
		out = make([]int64, 1)
		k.ok("Scan after a failed one", narma.Scan(ctx, c, mine, out, narma.Sum))
		if out[0] != int64(me*(me+1)/2) {
			k.errorf("Scan after a failed one: %d, want %d", out[0], me*(me+1)/2)
		}
		return k.err()
	})
}
