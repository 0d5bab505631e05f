package bench

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestSummaVariants: every variant multiplies matrices of 1 x 1 (empty
// blocks on most ranks), 13 x 13 and 24 x 24 with panels of 3 columns on
// grids of 1 x 1, 1 x 2, 2 x 2 and 2 x 3 ranks, under both
// synchronization strategies, with its product checked, and yields one
// row per variant and size.
func TestSummaVariants(t *testing.T) {
	vs := testVariantNames(Summa())
	sizes := []int{8, 13 * 8, 24 * 8}
	for _, st := range strategies {
		for _, np := range []int{1, 2, 4, 6} {
			t.Run(fmt.Sprintf("%s/%dranks", st, np), func(t *testing.T) {
				e := SummaWith(SummaLayout{Panel: 3})
				rows, err := runJobTimeout(e, np, Config{Sizes: sizes, Iters: 2, Rounds: 2, Warmup: 1, Strategy: st})
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, rows, rowsWant{experiment: "summa", variants: vs, sizes: sizes, ranks: np, iters: 2, rounds: 2}, nil)
				checkTableSays(t, e, rows, "time per multiplication")
			})
		}
	}
}

// TestSummaLayouts: a grid given explicitly, tall or wide, and panels
// wider than the blocks; the default panel width.
func TestSummaLayouts(t *testing.T) {
	for _, l := range []SummaLayout{{Rows: 3, Cols: 2, Panel: 2}, {Rows: 6, Cols: 1, Panel: 100}, {Rows: 1, Cols: 6}} {
		t.Run(fmt.Sprintf("%dx%d", l.Rows, l.Cols), func(t *testing.T) {
			rows, err := runJobTimeout(SummaWith(l), 6, Config{Sizes: []int{17 * 8}, Iters: 2, Rounds: 1, Warmup: -1})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(suVariants) {
				t.Errorf("%d rows, want %d", len(rows), len(suVariants))
			}
		})
	}
}

// TestSummaGrid: the default grid is the most square one, rows <= columns;
// a layout that does not fit the job, or is malformed, is refused.
func TestSummaGrid(t *testing.T) {
	for np, want := range map[int][2]int{1: {1, 1}, 2: {1, 2}, 4: {2, 2}, 6: {2, 3}, 7: {1, 7}, 12: {3, 4}} {
		if r, c, err := (SummaLayout{}).grid(np); err != nil || r != want[0] || c != want[1] {
			t.Errorf("grid of %d ranks: %d x %d, %v; want %d x %d", np, r, c, err, want[0], want[1])
		}
	}
	for _, l := range []SummaLayout{{Rows: 2, Cols: 3}, {Rows: 2}, {Rows: -1, Cols: -4}, {Panel: -1}} {
		if _, err := runJob(SummaWith(l), 4, Config{Sizes: []int{64}, Iters: 1, Rounds: 1, Warmup: -1}); err == nil {
			t.Errorf("layout %+v on 4 ranks accepted", l)
		}
	}
}

// TestSummaCuts: the panels cover the inner dimension in order, none is
// wider than the panel width, none crosses a block of A's columns or of
// B's rows, and each owner holds its panel.
func TestSummaCuts(t *testing.T) {
	for _, c := range []struct{ n, pr, pc, b int }{{1, 2, 3, 4}, {13, 2, 3, 3}, {64, 2, 2, 32}, {100, 3, 4, 7}, {5, 1, 1, 1}, {9, 4, 1, 100}} {
		cuts := summaCuts(c.n, c.pr, c.pc, c.b)
		if cuts[0] != 0 || cuts[len(cuts)-1] != c.n {
			t.Errorf("%+v: cuts %v do not span [0, %d]", c, cuts, c.n)
		}
		for s := 0; s+1 < len(cuts); s++ {
			k0, k1 := cuts[s], cuts[s+1]
			if k1 <= k0 || k1-k0 > c.b {
				t.Errorf("%+v: panel [%d, %d)", c, k0, k1)
			}
			for _, parts := range []int{c.pr, c.pc} {
				o := blockOf(k0, c.n, parts)
				if k0 < c.n*o/parts || k1 > c.n*(o+1)/parts {
					t.Errorf("%+v: panel [%d, %d) not within block %d of %d", c, k0, k1, o, parts)
				}
			}
		}
	}
}

// TestSummaTree: the binomial trees reach every rank once, each from its
// parent.
func TestSummaTree(t *testing.T) {
	for np := 1; np <= 9; np++ {
		for root := range np {
			got := make([]int, np)
			got[root]++
			for me := range np {
				treeChildren(me, root, np, func(child int) error {
					got[child]++
					if p := treeParent(child, root, np); p != me {
						t.Errorf("np %d, root %d: child %d of %d has parent %d", np, root, child, me, p)
					}
					return nil
				})
			}
			for r, n := range got {
				if n != 1 {
					t.Errorf("np %d, root %d: rank %d reached %d times", np, root, r, n)
				}
			}
		}
	}
}

// TestSummaKernel: the local multiply adds the product, for odd shapes.
func TestSummaKernel(t *testing.T) {
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 7}, {8, 300, 4}, {9, 257, 33}, {2, 0, 3}, {0, 4, 2}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for i := range a {
			a[i] = suEntry(0, i, 1)
		}
		for i := range b {
			b[i] = suEntry(1, i, 2)
		}
		for i := range c {
			c[i] = suEntry(2, i, 3)
		}
		want := make([]float64, m*n)
		for i := range m {
			for j := range n {
				s := c[i*n+j]
				for p := range k {
					s += a[i*k+p] * b[p*n+j]
				}
				want[i*n+j] = s
			}
		}
		gemmAdd(c, a, b, m, n, k)
		for i := range c {
			if math.Abs(c[i]-want[i]) > 1e-12 {
				t.Fatalf("%d x %d x %d: element %d is %g, want %g", m, n, k, i, c[i], want[i])
			}
		}
	}
}

// TestSummaWrongKernel: a local multiply that is slightly wrong fails the
// run of every variant, on every grid: the check of the product.
func TestSummaWrongKernel(t *testing.T) {
	for _, bad := range []struct {
		name   string
		kernel suKernel
	}{
		{"drops a term", func(c, a, b []float64, m, n, k int) {
			gemmAdd(c, a, b, m, n, k)
			if m > 0 && n > 0 {
				c[0] -= a[0] * b[0]
			}
		}},
		{"adds 1e-6", func(c, a, b []float64, m, n, k int) {
			gemmAdd(c, a, b, m, n, k)
			if m > 0 && n > 0 {
				c[m*n-1] += 1e-6
			}
		}},
	} {
		for _, np := range []int{1, 4, 6} {
			for _, v := range testVariantNames(Summa()) {
				t.Run(fmt.Sprintf("%s/%d/%s", bad.name, np, v), func(t *testing.T) {
					e := summaExperiment(SummaLayout{Panel: 4}, bad.kernel)
					_, err := runJobTimeout(e, np, Config{Sizes: []int{16 * 8}, Variants: []string{v}, Iters: 1, Rounds: 1, Warmup: -1})
					wantFailure(t, err, v, "wrong product", "a wrong kernel")
				})
			}
		}
	}
}

// TestSummaDetectsCorruption: a panel message whose stamp or whose data
// is damaged at its owner fails the run, for every variant: the stamp
// check or the check of the product.
func TestSummaDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(Summa()) {
		for _, what := range []string{"stamp", "data"} {
			t.Run(v+"/"+what, func(t *testing.T) {
				cfg := Config{Sizes: []int{16 * 8}, Variants: []string{v}, Iters: 1, Rounds: 1, Warmup: -1,
					Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
						if n != 5 {
							return
						}
						if what == "stamp" {
							msg[len(msg)-1]++
						} else {
							x := len(msg) / 2
							msg[x] = int64(math.Float64bits(math.Float64frombits(uint64(msg[x])) + 1))
						}
					})}
				_, err := runJobTimeout(SummaWith(SummaLayout{Panel: 4}), 4, cfg)
				want := "data not delivered"
				if what == "data" {
					want = "wrong product"
				}
				wantFailure(t, err, v, want, "a damaged "+what)
			})
		}
	}
}

// TestSummaSizes: matrices larger than MaxSummaSize allows are refused,
// by CheckSizes and by the run alike.
func TestSummaSizes(t *testing.T) {
	e := Summa()
	cfg := Config{Sizes: []int{64, MaxSummaSize + 8}, Iters: 1, Rounds: 1, Warmup: -1}
	err := e.CheckSizes(cfg, 4)
	if err == nil {
		t.Fatal("CheckSizes accepts a size above MaxSummaSize")
	}
	if _, rerr := runJob(e, 4, cfg); rerr == nil || !strings.Contains(rerr.Error(), err.Error()) {
		t.Errorf("CheckSizes says %q, Run %v", err, rerr)
	}
	if err := e.CheckSizes(Config{}, 4); err != nil {
		t.Errorf("CheckSizes refuses the default sizes: %v", err)
	}
}

// TestSummaNote: the note under the table gives the grid and the rates.
func TestSummaNote(t *testing.T) {
	rows := []Row{{Experiment: "summa", Variant: "put-notify", Bytes: 512, Ranks: 6, Iters: 2, Rounds: 3, MedianNs: 1e6, MinNs: 1e6, MaxNs: 1e6, MBps: 1}}
	for _, want := range []string{"grid of 2 x 3 ranks", "64x64: put-notify 0.52", "time per multiplication in ns"} {
		checkTableSays(t, Summa(), rows, want)
	}
	checkTableSays(t, SummaWith(SummaLayout{Rows: 3, Cols: 2, Panel: 8}), rows, "grid of 3 x 2 ranks, panels of up to 8 columns")
}
