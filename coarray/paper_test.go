package coarray

import (
	"context"
	"fmt"
	"testing"
)

// The two programs of Fanfarillo and Del Vento's evaluation, each with the
// three ways of telling the consumer that data arrived.

// mode is how a producer tells its consumer that a put landed.
type mode int

const (
	explicitEvents mode = iota // put, then EVENT POST (Fortran 2018)
	attachedEvents             // put into a range with an attached event (EVENT ATTACH)
	notifyVars                 // put with NOTIFY= (Fortran 2023)
)

func (m mode) String() string {
	return [...]string{"explicit events", "attached events", "notify variables"}[m]
}

var modes = []mode{explicitEvents, attachedEvents, notifyVars}

// signal is one notification channel of a program: an event that is
// posted explicitly or attached, or a notify variable, per mode.
type signal struct {
	m  mode
	ev *Event
	nv *Notify
}

func newSignal(ctx context.Context, im *Images, m mode) (*signal, error) {
	s := &signal{m: m}
	var err error
	if m == notifyVars {
		s.nv, err = NewNotify(ctx, im)
	} else {
		s.ev, err = NewEvent(ctx, im)
	}
	return s, err
}

// put puts src into a's block on image at off and signals it.
func (s *signal) put(a *Array[float64], image, off int, src []float64) error {
	switch s.m {
	case explicitEvents:
		if err := a.Put(image, off, src); err != nil {
			return err
		}
		return s.ev.Post(image)
	case attachedEvents:
		return a.Put(image, off, src)
	default:
		return a.Put(image, off, src, WithNotify(s.nv))
	}
}

// attach attaches the signal's event to [lo, hi) of a if the mode says so.
func (s *signal) attach(ctx context.Context, a *Array[float64], lo, hi int) error {
	if s.m != attachedEvents {
		return nil
	}
	return Attach(ctx, s.ev, a, lo, hi)
}

func (s *signal) wait(ctx context.Context) error {
	if s.nv != nil {
		return s.nv.Wait(ctx, 1)
	}
	return s.ev.Wait(ctx, 1)
}

func (s *signal) free(ctx context.Context) error {
	if s.nv != nil {
		return s.nv.Free(ctx)
	}
	return s.ev.Free(ctx)
}

// p2pSerial is Sync_p2p of the Parallel Research Kernels on one image:
// A(i,j) = A(i-1,j) + A(i,j-1) - A(i-1,j-1) over an m x n grid whose first
// row and column hold their index, iters times, each iteration starting
// with A(0,0) = -A(m-1,n-1) of the previous one.
func p2pSerial(m, n, iters int) [][]float64 {
	a := make([][]float64, m)
	for i := range a {
		a[i] = make([]float64, n)
		a[i][0] = float64(i)
	}
	for j := range n {
		a[0][j] = float64(j)
	}
	for it := range iters {
		if it > 0 {
			a[0][0] = -a[m-1][n-1]
		}
		for i := 1; i < m; i++ {
			for j := 1; j < n; j++ {
				a[i][j] = a[i-1][j] + a[i][j-1] - a[i-1][j-1]
			}
		}
	}
	return a
}

// p2pParallel is Sync_p2p over the images, the grid split into blocks of
// columns. Image p computes row i of its columns once it has A(i, start-1),
// the last value of row i of image p-1, which image p-1 puts into p's
// coarray edge(i) and signals with the signal of row i. The last image
// sends -A(m-1,n-1) to image 0 the same way, to start the next iteration.
// It stores this image's columns into grid.
func p2pParallel(ctx context.Context, im *Images, m, n, iters int, md mode, grid [][]float64) error {
	me, np := im.ThisImage(), im.NumImages()
	start, end := me*n/np, (me+1)*n/np
	w := end - start
	if me > 0 && start < 2 {
		return fmt.Errorf("image %d: columns [%d, %d): blocks need two columns", me, start, end)
	}
	// A(i, start+k) is a[i][k]; row 0 and column 0 hold their index.
	a := make([][]float64, m)
	for i := range a {
		a[i] = make([]float64, w)
	}
	for k := range w {
		a[0][k] = float64(start + k)
	}
	if me == 0 {
		for i := range m {
			a[i][0] = float64(i)
		}
	}
	edge, err := New[float64](ctx, im, m) // edge(i) = A(i, start-1)
	if err != nil {
		return err
	}
	corner, err := New[float64](ctx, im, 1) // -A(m-1,n-1), on image 0
	if err != nil {
		return err
	}
	rows := make([]*signal, m)
	for i := 1; i < m; i++ {
		if rows[i], err = newSignal(ctx, im, md); err != nil {
			return err
		}
		if err := rows[i].attach(ctx, edge, i, i+1); err != nil {
			return err
		}
	}
	cs, err := newSignal(ctx, im, md)
	if err != nil {
		return err
	}
	if err := cs.attach(ctx, corner, 0, 1); err != nil {
		return err
	}
	for it := range iters {
		if me == 0 && it > 0 {
			if err := cs.wait(ctx); err != nil {
				return err
			}
			a[0][0] = corner.Local()[0]
		}
		left := float64(start - 1) // A(i-1, start-1), for row i
		for i := 1; i < m; i++ {
			if me > 0 {
				if err := rows[i].wait(ctx); err != nil {
					return err
				}
				l := edge.Local()[i]
				a[i][0] = a[i-1][0] + l - left
				left = l
			}
			for k := 1; k < w; k++ {
				a[i][k] = a[i-1][k] + a[i][k-1] - a[i-1][k-1]
			}
			if me < np-1 {
				if err := rows[i].put(edge, me+1, i, a[i][w-1:]); err != nil {
					return err
				}
			}
		}
		if me == np-1 {
			if err := cs.put(corner, 0, 0, []float64{-a[m-1][w-1]}); err != nil {
				return err
			}
		}
	}
	for i := range m {
		copy(grid[i][start:end], a[i])
	}
	if err := im.SyncAll(ctx); err != nil {
		return err
	}
	for _, s := range append(rows[1:], cs) {
		if err := s.free(ctx); err != nil {
			return err
		}
	}
	if err := corner.Free(ctx); err != nil {
		return err
	}
	return edge.Free(ctx)
}

func TestSyncP2P(t *testing.T) {
	const m, n, iters = 24, 13, 6
	want := p2pSerial(m, n, iters)
	if c := want[m-1][n-1]; c != float64(iters*(m+n-2)) {
		t.Fatalf("serial corner %v, want %v", c, iters*(m+n-2))
	}
	for _, md := range modes {
		for _, np := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%v/%d images", md, np), func(t *testing.T) {
				grid := make([][]float64, m)
				for i := range grid {
					grid[i] = make([]float64, n)
				}
				runImages(t, np, func(ctx context.Context, im *Images) error {
					if err := p2pParallel(ctx, im, m, n, iters, md, grid); err != nil {
						return err
					}
					// Each image checks its own columns too: images that
					// are processes do not share grid.
					me := im.ThisImage()
					for i := range m {
						for j := me * n / np; j < (me+1)*n/np; j++ {
							if grid[i][j] != want[i][j] {
								return fmt.Errorf("image %d: A(%d,%d) = %v, serial %v", me, i, j, grid[i][j], want[i][j])
							}
						}
					}
					return nil
				})
				for i := range m {
					for j := range n {
						if grid[i][j] != want[i][j] {
							t.Fatalf("A(%d,%d) = %v, serial %v", i, j, grid[i][j], want[i][j])
						}
					}
				}
				if c := grid[m-1][n-1]; c != float64(iters*(m+n-2)) {
					t.Errorf("corner %v, want %v", c, iters*(m+n-2))
				}
			})
		}
	}
}

// haloInit is the grid before the first Jacobi step, boundary included.
func haloInit(i, j int) float64 { return float64((5*i+13*j)%17) / 4 }

// jacobi is one five-point Jacobi step on rows 1..rows of a grid of
// width cols+2 stored row-major, from old into new; the boundary cells of
// new are left alone.
func jacobi(old, new []float64, rows, cols int) {
	w := cols + 2
	for i := 1; i <= rows; i++ {
		for j := 1; j <= cols; j++ {
			new[i*w+j] = 0.25 * (old[(i-1)*w+j] + old[(i+1)*w+j] + old[i*w+j-1] + old[i*w+j+1])
		}
	}
}

// haloSerial runs iters Jacobi steps on the whole grid.
func haloSerial(nr, nc, iters int) []float64 {
	w := nc + 2
	u := [2][]float64{make([]float64, (nr+2)*w), make([]float64, (nr+2)*w)}
	for b := range u {
		for i := range nr + 2 {
			for j := range w {
				u[b][i*w+j] = haloInit(i, j)
			}
		}
	}
	for it := range iters {
		jacobi(u[it%2], u[(it+1)%2], nr, nc)
	}
	return u[iters%2]
}

// haloParallel runs iters Jacobi steps with the interior rows split into
// blocks of r rows per image. Each image's block of the coarrays u[0] and
// u[1] (old and new alternate) holds its rows and a halo row above and
// below. After each step an image puts its first row into the halo below
// of the image above and its last row into the halo above of the image
// below; halo arrivals are signalled per buffer and side. It stores this
// image's rows into grid (global, row-major).
func haloParallel(ctx context.Context, im *Images, r, nc, iters int, md mode, grid []float64) error {
	me, np := im.ThisImage(), im.NumImages()
	w := nc + 2
	var u [2]*Array[float64]
	var fromAbove, fromBelow [2]*signal // arrival of the halo above, below
	for b := range 2 {
		var err error
		if u[b], err = New[float64](ctx, im, (r+2)*w); err != nil {
			return err
		}
		if fromAbove[b], err = newSignal(ctx, im, md); err != nil {
			return err
		}
		if fromBelow[b], err = newSignal(ctx, im, md); err != nil {
			return err
		}
		if err := fromAbove[b].attach(ctx, u[b], 0, w); err != nil {
			return err
		}
		if err := fromBelow[b].attach(ctx, u[b], (r+1)*w, (r+2)*w); err != nil {
			return err
		}
		loc := u[b].Local()
		for i := range r + 2 {
			for j := range w {
				loc[i*w+j] = haloInit(me*r+i, j)
			}
		}
	}
	// Nobody may put into a block before its image has initialized it.
	if err := im.SyncAll(ctx); err != nil {
		return err
	}
	for it := range iters {
		old, new := it%2, (it+1)%2
		if it > 0 {
			// The halos of old were put in the previous step.
			if me > 0 {
				if err := fromAbove[old].wait(ctx); err != nil {
					return err
				}
			}
			if me < np-1 {
				if err := fromBelow[old].wait(ctx); err != nil {
					return err
				}
			}
		}
		jacobi(u[old].Local(), u[new].Local(), r, nc)
		nl := u[new].Local()
		if me > 0 { // my first row -> halo below of the image above
			if err := fromBelow[new].put(u[new], me-1, (r+1)*w+1, nl[w+1:w+1+nc]); err != nil {
				return err
			}
		}
		if me < np-1 { // my last row -> halo above of the image below
			if err := fromAbove[new].put(u[new], me+1, 1, nl[r*w+1:r*w+1+nc]); err != nil {
				return err
			}
		}
	}
	copy(grid[(me*r+1)*w:], u[iters%2].Local()[w:(r+1)*w])
	if err := im.SyncAll(ctx); err != nil {
		return err
	}
	for b := range 2 {
		for _, s := range []*signal{fromAbove[b], fromBelow[b]} {
			if err := s.free(ctx); err != nil {
				return err
			}
		}
		if err := u[b].Free(ctx); err != nil {
			return err
		}
	}
	return nil
}

func TestHaloExchange(t *testing.T) {
	const r, nc, iters, np = 5, 12, 40, 4
	nr, w := r*np, nc+2
	want := haloSerial(nr, nc, iters)
	results := map[mode][]float64{}
	for _, md := range modes {
		t.Run(md.String(), func(t *testing.T) {
			grid := make([]float64, (nr+2)*w)
			runImages(t, np, func(ctx context.Context, im *Images) error {
				if err := haloParallel(ctx, im, r, nc, iters, md, grid); err != nil {
					return err
				}
				// Each image checks its own rows too: images that are
				// processes do not share grid.
				me := im.ThisImage()
				for i := me*r + 1; i <= (me+1)*r; i++ {
					for j := 1; j <= nc; j++ {
						if got := grid[i*w+j]; got != want[i*w+j] {
							return fmt.Errorf("image %d: T(%d,%d) = %v, serial %v", me, i, j, got, want[i*w+j])
						}
					}
				}
				return nil
			})
			for i := 1; i <= nr; i++ {
				for j := 1; j <= nc; j++ {
					if got := grid[i*w+j]; got != want[i*w+j] {
						t.Fatalf("T(%d,%d) = %v, serial %v", i, j, got, want[i*w+j])
					}
				}
			}
			results[md] = grid
		})
	}
	// Identical to the serial run, and so to each other; make sure the
	// grid moved at all.
	if want[(nr/2)*w+nc/2] == haloInit(nr/2, nc/2) {
		t.Errorf("the middle of the grid did not change")
	}
	if fmt.Sprint(results[explicitEvents]) != fmt.Sprint(results[attachedEvents]) {
		t.Errorf("explicit and attached events give different grids")
	}
}
