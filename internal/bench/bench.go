// Package bench holds the experiments of narmabench as library code: each
// experiment is a function that every rank of a job runs, and that returns
// the measurements on rank 0 as rows. The command cmd/narmabench runs the
// experiments over goroutine ranks or under the launcher and formats the
// rows (see WriteTable, WriteCSV and WriteJSON).
//
// A row carries the median, 10th and 90th percentiles, minimum and
// maximum of its times over the measured rounds. The CSV and JSON output
// also describe the run (Meta): WriteJSON writes one object,
// {"meta": {...}, "rows": [...]}, which ReadJSON reads along with the
// bare array of rows of earlier versions; WriteCSV repeats the metadata
// in columns after the row's on every record (CSVHeader), so that the
// file stays one table for any CSV reader. The C sources of the MPI
// reference programs are embedded (MPISources) and written out to be
// built with mpicc when they are run.
package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/narma-rma/narma"
)

// Experiment is one experiment of the suite: a name to select it, the
// variants it compares, and the function every rank of the job runs.
type Experiment struct {
	// Name selects the experiment on the command line, e.g. "pingpong".
	Name string
	// Summary is a one-line description, with the figure it reproduces.
	Summary string
	// Measure says what the times of the rows measure, e.g. "half round
	// trip" or "time per round"; tables print it in their title.
	Measure string
	// Value, if not nil, is what tables and plots show of a row instead
	// of its median time in ns, and Unit names it (tables then print no
	// time ratios, plots a linear axis).
	Value func(r Row) float64
	Unit  string
	// Params marks an experiment whose rows are parameters, not times by
	// size (LogGP): tables list them one per line.
	Params bool
	// SizeName, if not nil, names a size as tables, summaries and
	// progress messages show it, where the bytes are not what the
	// experiment's list entry speaks of (Cholesky's tiles of b x b
	// elements); SizeLabel falls back to FormatSize. Columns then says
	// what the names are, in the table's title.
	SizeName func(bytes int) string
	Columns  string
	// Note, if not nil, returns lines that tables print under their
	// rows, from the rows of the experiment: what a figure means where it
	// is easy to misread (overlap's shares below 0).
	Note func(rows []Row) []string
	// Ranks is the number of ranks the experiment needs; 0 means any
	// number from 2.
	Ranks int
	// Variants are the implementations the experiment compares, in the
	// order of its output.
	Variants []Variant
	// Run runs the experiment on one rank of a job. Every rank calls it
	// with the same Config; rank 0 returns the rows, the others nil.
	Run func(c *narma.Comm, cfg Config) ([]Row, error)
}

// Variant is one implementation compared by an experiment.
type Variant struct {
	// Name selects the variant, e.g. "put-notify".
	Name string
	// Summary says how the variant synchronizes.
	Summary string
	// Unsound marks a variant that is not a correct program under the RMA
	// model (a lower bound, not an alternative); tables mark it with a
	// star and a footnote.
	Unsound bool
	// Classic marks the classic synchronization schemes that notified
	// access is compared against.
	Classic bool
}

// SizeLabel returns size as e's tables show it: e.SizeName's name for
// it, else FormatSize's.
func (e Experiment) SizeLabel(size int) string {
	if e.SizeName != nil {
		return e.SizeName(size)
	}
	return FormatSize(size)
}

// Label returns the variant's name as tables show it: with a star if it
// is unsound.
func (v Variant) Label() string {
	if v.Unsound {
		return v.Name + "*"
	}
	return v.Name
}

// Config selects what an experiment measures. The zero Config measures
// every variant at the default sizes with the default repetitions.
type Config struct {
	// Sizes are the message sizes in bytes (multiples of 8); nil means
	// the experiment's default sizes (DefaultSizes for the ping-pong).
	Sizes []int
	// Variants are the names of the variants to measure, in the
	// experiment's order whatever their order here; nil means all.
	Variants []string
	// Iters is the number of operations (round trips, exchange rounds,
	// reductions) per measured round; 0 chooses by size.
	Iters int
	// Rounds is the number of measured rounds, over which the median,
	// minimum and maximum are taken; 0 means DefaultRounds.
	Rounds int
	// Warmup is the number of round trips each variant makes at each
	// size before the measured rounds; 0 chooses by size, negative means
	// none.
	Warmup int
	// Strategy is the synchronization strategy of the experiment's
	// windows; the zero value lets the transport choose.
	Strategy narma.Strategy
	// Budget, if positive, bounds the measured rounds of each variant at
	// each size: a variant whose warm-up says that its rounds would take
	// longer runs fewer iterations per round, at least 1 (its rows say
	// how many; tables name it under the rows). Without a warm-up
	// (Warmup negative) there is no bound; 0 means none.
	Budget time.Duration
	// Progress, if not nil, is called on rank 0 with a short description
	// of what is being measured.
	Progress func(msg string)
	// Corrupt, if not nil, is called on every outgoing message after it
	// was stamped, before it is sent; tests use it to check that each
	// variant detects a message that did not arrive intact.
	Corrupt func(variant string, msg []int64)
}

// DefaultSizes are the message sizes measured when Config.Sizes is nil:
// 8 B to 1 MiB, as in the ping-pong figure of Belli and Hoefler.
var DefaultSizes = []int{8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20}

// DefaultRounds is the number of measured rounds when Config.Rounds is 0.
const DefaultRounds = 15

// MaxSize is the largest message size an experiment accepts.
const MaxSize = 256 << 20

// Row is one measurement: one variant of one experiment at one size.
// Times are what the experiment's Measure names (a half round trip, the
// time of an exchange round or of a reduction), in nanoseconds, over the
// measured rounds.
type Row struct {
	Experiment string  `json:"experiment"`
	Variant    string  `json:"variant"`
	Bytes      int     `json:"bytes"`
	Ranks      int     `json:"ranks"`
	Iters      int     `json:"iters"`
	Rounds     int     `json:"rounds"`
	MedianNs   float64 `json:"median_ns"`
	MinNs      float64 `json:"min_ns"`
	MaxNs      float64 `json:"max_ns"`
	// P10Ns and P90Ns are the 10th and 90th percentiles of the rounds'
	// times, interpolated linearly between the sorted times as the median
	// is (see quantile): MinNs <= P10Ns <= MedianNs <= P90Ns <= MaxNs.
	// Both are 0 in a row made without its rounds' times.
	P10Ns   float64 `json:"p10_ns"`
	P90Ns   float64 `json:"p90_ns"`
	MBps    float64 `json:"mb_per_s"` // bytes moved per rank per median time, as the experiment defines them, in 10^6 bytes per second
	Unsound bool    `json:"unsound"`  // the variant is not a correct RMA program
	// OverlapPct is, for the overlap experiment, the share of the
	// communication time hidden behind computation, in percent.
	OverlapPct float64 `json:"overlap_pct,omitempty"`
}

// Experiments returns the experiments of the suite, in the order `list`
// shows them.
func Experiments() []Experiment {
	return []Experiment{PingPong(), Overlap(), Stencil(), TreeReduce(), Cholesky(), AllToAll(), Halo(), FenceCost(), LogGP(), Summa()}
}

// Lookup returns the experiment called name.
func Lookup(name string) (Experiment, bool) {
	for _, e := range Experiments() {
		if e.Name == name {
			return e, true
		}
	}
	return Experiment{}, false
}

// Check reports whether cfg is valid for e: sizes in range and multiples
// of 8, known variants, non-negative counts.
func (e Experiment) Check(cfg Config) error {
	for _, s := range cfg.Sizes {
		if s < 8 || s > MaxSize || s%8 != 0 {
			return fmt.Errorf("size %d: must be a multiple of 8 bytes from 8 B to %s", s, FormatSize(MaxSize))
		}
	}
	for _, name := range cfg.Variants {
		if !slices.ContainsFunc(e.Variants, func(v Variant) bool { return v.Name == name }) {
			return fmt.Errorf("%s has no variant %q (variants: %s)", e.Name, name, strings.Join(e.variantNames(), ", "))
		}
	}
	if cfg.Iters < 0 || cfg.Rounds < 0 {
		return fmt.Errorf("iterations and rounds must not be negative")
	}
	return nil
}

// CheckSizes reports whether e can run on ranks ranks at the sizes cfg
// asks for (e's default sizes if none), beyond the bounds that Check
// sets for every experiment: the stencil's rows need two columns per
// rank and the stencil's rows and the halo's edges have a largest size,
// and LogGP needs two distinct sizes to fit a line. Run refuses the same
// sizes before it measures anything; `narmabench all` asks CheckSizes
// first and skips the experiments that cannot take the user's sizes.
func (e Experiment) CheckSizes(cfg Config, ranks int) error {
	if check, ok := sizeChecks[e.Name]; ok {
		return check(cfg, ranks)
	}
	return nil
}

// sizeChecks are the checks of CheckSizes, by experiment. They mirror
// the checks that runStencil, runHalo and runLogGP make before they
// measure; TestCheckSizesAgreesWithRun checks that they agree.
var sizeChecks = map[string]func(cfg Config, ranks int) error{
	"stencil": func(cfg Config, ranks int) error {
		for _, size := range cfg.sizesOr(DefaultStencilSizes) {
			if size > MaxStencilSize {
				return fmt.Errorf("rows of %s: at most %s", FormatSize(size), FormatSize(MaxStencilSize))
			}
			if size/8 < 2*ranks {
				return fmt.Errorf("rows of %s: %d columns over %d ranks, need at least 2 per rank", FormatSize(size), size/8, ranks)
			}
		}
		return nil
	},
	"halo": func(cfg Config, ranks int) error {
		px, py := hGrid(ranks)
		for _, size := range cfg.sizesOr(DefaultHaloSizes) {
			if size > MaxHaloSize {
				return fmt.Errorf("edges of %s: at most %s", FormatSize(size), FormatSize(MaxHaloSize))
			}
			if s := size / 8; px*s > haloCoordLimit || py*s > haloCoordLimit {
				return fmt.Errorf("edges of %s over a %d x %d grid: the global grid is too large for the cell values", FormatSize(size), px, py)
			}
		}
		return nil
	},
	"loggp": func(cfg Config, ranks int) error {
		sizes := slices.Clone(cfg.sizesOr(LogGPSizes))
		slices.Sort(sizes)
		if len(slices.Compact(sizes)) < 2 {
			return fmt.Errorf("needs at least two distinct sizes to fit G and L, got %v", cfg.Sizes)
		}
		return nil
	},
}

func (e Experiment) variantNames() []string {
	names := make([]string, len(e.Variants))
	for i, v := range e.Variants {
		names[i] = v.Name
	}
	return names
}

// selected returns the variants of e that cfg selects, in e's order.
func (e Experiment) selected(cfg Config) []Variant {
	if len(cfg.Variants) == 0 {
		return e.Variants
	}
	var vs []Variant
	for _, v := range e.Variants {
		if slices.Contains(cfg.Variants, v.Name) {
			vs = append(vs, v)
		}
	}
	return vs
}

// summarize returns the median, minimum and maximum of the per-round
// times of one variant and size (see Row.setTimes for all of a row's
// statistics).
func summarize(times []float64) (median, lo, hi float64) {
	st := statsOf(times)
	return st.median, st.min, st.max
}

// roundStats are the statistics of the per-round times of one variant
// and size that a Row carries.
type roundStats struct {
	median, min, max, p10, p90 float64
}

// statsOf returns the statistics of times; all are 0 if there are none.
func statsOf(times []float64) roundStats {
	t := slices.Clone(times)
	slices.Sort(t)
	n := len(t)
	if n == 0 {
		return roundStats{}
	}
	st := roundStats{median: t[n/2], min: t[0], max: t[n-1]}
	if n%2 == 0 {
		st.median = (t[n/2-1] + t[n/2]) / 2
	}
	// Clamped to the median against rounding, so that the order holds.
	st.p10 = min(quantile(t, 0.1), st.median)
	st.p90 = max(quantile(t, 0.9), st.median)
	return st
}

// quantile returns the q-quantile (0 <= q <= 1) of the sorted times t,
// interpolated linearly between the two nearest times (definition 7 of
// Hyndman and Fan, the default of R and NumPy): 0 gives the minimum, 1
// the maximum and 0.5 the median.
func quantile(t []float64, q float64) float64 {
	if len(t) == 0 {
		return 0
	}
	pos := q * float64(len(t)-1)
	i := int(math.Floor(pos))
	if i >= len(t)-1 {
		return t[len(t)-1]
	}
	return t[i] + (pos-float64(i))*(t[i+1]-t[i])
}

// setTimes sets the times of r from the times of its rounds: the median,
// minimum, maximum and 10th and 90th percentiles.
func (r *Row) setTimes(times []float64) {
	st := statsOf(times)
	r.MedianNs, r.MinNs, r.MaxNs, r.P10Ns, r.P90Ns = st.median, st.min, st.max, st.p10, st.p90
}
