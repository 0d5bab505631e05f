package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// FormatSize returns a size in bytes as tables show it: "8 B", "4 KiB",
// "1 MiB" (in bytes when it is not a whole number of KiB or MiB).
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// ParseSize parses a size in bytes: a number with an optional binary
// suffix K, M or G (case-insensitive, optionally followed by "iB" or
// "B"), e.g. "8", "1K", "64KiB", "1M".
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if k := len(t); k > 0 {
		switch t[k-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
		if shift > 0 {
			t = t[:k-1]
		}
	}
	v, err := strconv.Atoi(t)
	if err != nil || v < 0 || v > math.MaxInt32 {
		return 0, fmt.Errorf("bad size %q: want a number of bytes with an optional K, M or G suffix", s)
	}
	return v << shift, nil
}

// ParseSizes parses a comma-separated list of sizes (see ParseSize).
func ParseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		v, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		sizes = append(sizes, v)
	}
	return sizes, nil
}

// WriteTable writes the rows of experiment e as an aligned text table:
// one line per variant, one column per size, each cell the median time
// (what e.Measure says) in nanoseconds; then a line with the widest
// spread of the rounds' times, (p90 - p10) / median, which the CSV and
// JSON give per row; then, per size, the ratio of the best classic
// variant to put-notify (above 1: notified access is faster), and a
// footnote for unsound variants.
func WriteTable(w io.Writer, e Experiment, rows []Row) error {
	if e.Params {
		return writeParams(w, e, rows)
	}
	var sizes []int
	cell := map[string]map[int]Row{}
	rounds := 0
	for _, r := range rows {
		if r.Experiment != e.Name {
			continue
		}
		if cell[r.Variant] == nil {
			cell[r.Variant] = map[int]Row{}
		}
		if _, seen := cell[r.Variant][r.Bytes]; !seen && !slices.Contains(sizes, r.Bytes) {
			sizes = append(sizes, r.Bytes)
		}
		cell[r.Variant][r.Bytes] = r
		rounds = r.Rounds
	}
	if len(sizes) == 0 {
		_, err := fmt.Fprintf(w, "%s: no measurements\n", e.Name)
		return err
	}
	measure, unit := e.Measure, "ns"
	if measure == "" {
		measure = "time"
	}
	if e.Value != nil {
		unit = e.Unit
	}
	fmt.Fprintf(w, "%s: %s in %s, median of %d rounds%s\n", e.Name, measure, unit, rounds, ranksOf(rows, e))
	if e.Columns != "" {
		fmt.Fprintf(w, "columns: %s\n", e.Columns)
	}
	fmt.Fprintln(w)
	// Right-aligned numbers; the variant names, padded to one width,
	// stay left-aligned.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := len("variant")
	for _, v := range e.Variants {
		width = max(width, len(v.Label()))
	}
	fmt.Fprintf(tw, "%-*s\t", width, "variant")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s\t", e.SizeLabel(s))
	}
	fmt.Fprintln(tw)
	var unsound []Variant
	for _, v := range e.Variants {
		bySize, ok := cell[v.Name]
		if !ok {
			continue
		}
		if v.Unsound {
			unsound = append(unsound, v)
		}
		fmt.Fprintf(tw, "%-*s\t", width, v.Label())
		for _, s := range sizes {
			if r, ok := bySize[s]; ok && e.Value != nil {
				fmt.Fprintf(tw, "%.1f\t", e.Value(r))
			} else if ok {
				fmt.Fprintf(tw, "%.0f\t", r.MedianNs)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeSpread(w, e, sizes, cell)
	writeBudgetCuts(w, e, sizes, cell)
	if e.Note != nil {
		if lines := e.Note(rows); len(lines) > 0 {
			fmt.Fprintln(w)
			for _, l := range lines {
				fmt.Fprintln(w, l)
			}
		}
	}
	if e.Value == nil {
		var classic []string
		for _, v := range e.Variants {
			if v.Classic {
				classic = append(classic, v.Name)
			}
		}
		writeRatios(w, e, "best classic variant / put-notify (above 1: notified access is faster):", 10, sizes, cell, classic)
		writeMPIRatios(w, e, sizes, cell)
	}
	if len(unsound) > 0 {
		fmt.Fprintln(w)
	}
	for _, v := range unsound {
		fmt.Fprintf(w, "* %s: %s.\n", v.Name, v.Summary)
	}
	return nil
}

// ranksOf returns the table title's note of the ranks e's rows ran on,
// e.g. ", 4 ranks" (the rows of the MPI reference programs aside), or ""
// if they do not say.
func ranksOf(rows []Row, e Experiment) string {
	for _, r := range rows {
		if r.Experiment == e.Name && r.Ranks > 0 && !strings.HasPrefix(r.Variant, MPIPrefix) {
			return fmt.Sprintf(", %d ranks", r.Ranks)
		}
	}
	return ""
}

// writeBudgetCuts writes, under WriteTable's rows, the variants that ran
// fewer iterations per round than the others at their size: those that
// the time budget per variant and size (Config.Budget) cut, with the
// iterations they ran. The rows of the MPI reference programs, which
// choose their own, are left out.
func writeBudgetCuts(w io.Writer, e Experiment, sizes []int, cell map[string]map[int]Row) {
	var cuts []string
	for _, s := range sizes {
		most := 0
		for name, bySize := range cell {
			if r, ok := bySize[s]; ok && !strings.HasPrefix(name, MPIPrefix) {
				most = max(most, r.Iters)
			}
		}
		for _, v := range e.Variants {
			if r, ok := cell[v.Name][s]; ok && r.Iters < most {
				cuts = append(cuts, fmt.Sprintf("%s at %s (%d of %d)", v.Name, e.SizeLabel(s), r.Iters, most))
			}
		}
	}
	if len(cuts) == 0 {
		return
	}
	fmt.Fprintf(w, "cut to fewer iterations per round to stay within the time budget per variant and size (--budget): %s\n",
		strings.Join(cuts, ", "))
}

// writeMPIRatios writes, per size, the ratio of the fastest MPI reference
// program (rows named MPIPrefix+variant) to narma's put-notify, if the
// rows have both.
func writeMPIRatios(w io.Writer, e Experiment, sizes []int, cell map[string]map[int]Row) {
	var names []string
	for name := range cell {
		if strings.HasPrefix(name, MPIPrefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	writeRatios(w, e, "best MPI variant / narma's put-notify (above 1: narma is faster):", 14, sizes, cell, names)
}

// writeRatios writes, under title, per size with a put-notify row and a
// row of one of the variants names, the fastest of those and its median
// divided by put-notify's (names in a column of width).
func writeRatios(w io.Writer, e Experiment, title string, width int, sizes []int, cell map[string]map[int]Row, names []string) {
	header := false
	for _, s := range sizes {
		n, ok := cell[NotifyVariant][s]
		if !ok || n.MedianNs <= 0 {
			continue
		}
		best, bestName := math.Inf(1), ""
		for _, name := range names {
			if r, ok := cell[name][s]; ok && r.MedianNs < best {
				best, bestName = r.MedianNs, name
			}
		}
		if bestName == "" {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\n"+title)
			header = true
		}
		fmt.Fprintf(w, "%9s  %-*s %6.2f\n", e.SizeLabel(s), width, bestName, best/n.MedianNs)
	}
}

// Meta describes the run that measured a set of rows: the job, the build
// and the machine. WriteJSON writes it once beside the rows; WriteCSV
// repeats it on every record (see CSVMetaColumns).
type Meta struct {
	// Transport is the transport between the ranks of narma's job: under
	// narmarun, the launcher's ("shm", "tcp" or "hybrid"); over goroutine
	// ranks, the in-process transport that NARMA_TRANSPORT selects
	// ("local" when it is unset). The rows of the MPI reference programs
	// ran over MPI's own.
	Transport string `json:"transport"`
	// Launcher is "narmarun" when the ranks are processes of the
	// launcher's job, the name of another launcher that started them
	// ("slurm", "openmpi", "mpich": see narma.Init), "none" when they are
	// goroutines of one process.
	Launcher string `json:"launcher"`
	// Strategy is the synchronization strategy of the windows: "default"
	// (the transport's choice), "immediate" or "deferred".
	Strategy string `json:"strategy"`
	// JobRanks is the number of ranks of the job: the launcher's, or -n
	// over goroutines. Each row says how many its experiment ran on
	// (Row.Ranks), which can differ: under `narmabench all` the
	// experiments that need a fixed number of ranks run on that many.
	JobRanks int `json:"job_ranks"`
	// Commit is the commit of the build: its VCS revision, with "+dirty"
	// if the tree had changes; without VCS information (a build with
	// -buildvcs=false, or a test) the main module's version, e.g. a
	// pseudo-version, else, if the program runs inside the module's git
	// tree, the commit git gives for it (with "+dirty" if git status
	// lists changes); "unknown" if there is none.
	Commit string `json:"commit"`
	// GoVersion is the Go release that built the program
	// (runtime.Version).
	GoVersion string `json:"go_version"`
	// GOOS and GOARCH are the program's operating system and
	// architecture.
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	// NumCPU is the number of CPUs the process could use when the run
	// started (runtime.NumCPU), and GOMAXPROCS the number of threads that
	// ran Go code at once.
	NumCPU     int `json:"num_cpu"`
	GOMAXPROCS int `json:"gomaxprocs"`
	// Date is when the run started, in RFC 3339.
	Date string `json:"date"`
}

// NewMeta returns the Meta of a run that starts now, in this process,
// with the fields of the build and the machine filled in: Commit,
// GoVersion, GOOS, GOARCH, NumCPU, GOMAXPROCS and Date. The caller sets
// those of the job.
func NewMeta() Meta {
	return Meta{
		Commit:     buildCommit(),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Date:       time.Now().Format(time.RFC3339),
	}
}

// Describe returns the line that tables print above their rows about the
// job of the run: whether the ranks were goroutines of one process or
// processes (under which launcher), over which transport, with which
// strategy, and the commit, e.g. "run: ranks as goroutines of one
// process over the local transport, strategy default, commit 1a2b3c4".
func (m Meta) Describe() string {
	ranks := "ranks as goroutines of one process"
	if m.Launcher != "none" && m.Launcher != "" {
		ranks = "ranks as processes under " + m.Launcher
	}
	// A git revision shortened to 12 digits, as the CSV has it whole.
	commit := m.Commit
	if rev, dirty := strings.CutSuffix(commit, "+dirty"); len(rev) == 40 && strings.Trim(rev, "0123456789abcdef") == "" {
		commit = rev[:12]
		if dirty {
			commit += "+dirty"
		}
	}
	return fmt.Sprintf("run: %s over the %s transport, strategy %s, commit %s", ranks, m.Transport, m.Strategy, commit)
}

// commitOf returns Meta.Commit for the build information bi (nil if
// there is none).
func commitOf(bi *debug.BuildInfo) string {
	if bi == nil {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev != "" && dirty:
		return rev + "+dirty"
	case rev != "":
		return rev
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return bi.Main.Version
	}
	return "unknown"
}

// writeSpread writes the lines of WriteTable under the table about the
// spread of the rounds' times: for the time tables (those that show
// medians), the widest (p90 - p10) / median of the cells; for every
// table, where to find each row's spread.
func writeSpread(w io.Writer, e Experiment, sizes []int, cell map[string]map[int]Row) {
	const where = "every row's spread over the rounds (p10_ns, p90_ns, min_ns, max_ns): --csv or --json"
	widest, at := -1.0, ""
	if e.Value == nil {
		for _, v := range e.Variants {
			for _, size := range sizes {
				r, ok := cell[v.Name][size]
				if !ok || r.Rounds < 2 || r.MedianNs <= 0 || r.P10Ns == 0 && r.P90Ns == 0 {
					continue
				}
				if s := (r.P90Ns - r.P10Ns) / r.MedianNs; s > widest {
					widest, at = s, fmt.Sprintf("%s at %s", v.Name, e.SizeLabel(r.Bytes))
				}
			}
		}
	}
	if widest < 0 {
		fmt.Fprintf(w, "\n%s\n", where)
		return
	}
	prec := 0
	if widest < 0.1 {
		prec = 1
	}
	fmt.Fprintf(w, "\nspread of the rounds, (p90 - p10) / median: up to %s%% (%s)\n%s\n",
		strconv.FormatFloat(100*widest, 'f', prec, 64), at, where)
}

// CSVRowColumns are the columns of a row in CSV, in the order of
// WriteCSV and of the output of the MPI reference programs. The spread
// (p10_ns, p90_ns) comes after the columns of earlier versions, so that
// readers that count columns still find those where they were.
var CSVRowColumns = []string{"experiment", "variant", "bytes", "ranks", "iters", "rounds", "median_ns", "min_ns", "max_ns",
	"mb_per_s", "unsound", "overlap_pct", "p10_ns", "p90_ns"}

// CSVMetaColumns are the columns of the run's metadata (Meta) in CSV,
// after CSVRowColumns: every row repeats them.
var CSVMetaColumns = []string{"transport", "launcher", "strategy", "job_ranks", "commit", "go_version", "goos", "goarch",
	"num_cpu", "gomaxprocs", "date"}

// CSVHeader is the header line of WriteCSV, one name per column:
// CSVRowColumns, then CSVMetaColumns.
var CSVHeader = append(slices.Clip(CSVRowColumns), CSVMetaColumns...)

// WriteCSV writes rows as CSV with the header CSVHeader: one record per
// row, each with the row's columns and then meta's. Repeating the
// metadata on every record keeps the file one rectangular table that any
// CSV reader takes, and keeps the rows of several runs apart when their
// files are concatenated or loaded together.
func WriteCSV(w io.Writer, meta Meta, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	m := []string{meta.Transport, meta.Launcher, meta.Strategy, strconv.Itoa(meta.JobRanks), meta.Commit, meta.GoVersion,
		meta.GOOS, meta.GOARCH, strconv.Itoa(meta.NumCPU), strconv.Itoa(meta.GOMAXPROCS), meta.Date}
	for _, r := range rows {
		rec := []string{r.Experiment, r.Variant, strconv.Itoa(r.Bytes), strconv.Itoa(r.Ranks),
			strconv.Itoa(r.Iters), strconv.Itoa(r.Rounds), f(r.MedianNs), f(r.MinNs), f(r.MaxNs),
			f(r.MBps), strconv.FormatBool(r.Unsound), f(r.OverlapPct), f(r.P10Ns), f(r.P90Ns)}
		if err := cw.Write(append(rec, m...)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Results is what WriteJSON writes and ReadJSON reads: the metadata of a
// run and its rows.
type Results struct {
	// Meta describes the run; it is zero in a file of an earlier version.
	Meta Meta `json:"meta"`
	// Rows are the measurements, in the order of the run.
	Rows []Row `json:"rows"`
}

// WriteJSON writes meta and rows as one indented JSON object, a Results:
// {"meta": {...}, "rows": [{...}, ...]}.
func WriteJSON(w io.Writer, meta Meta, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Results{Meta: meta, Rows: rows})
}

// ReadJSON reads what WriteJSON writes. It also reads the files of
// earlier versions, a bare array of rows, as Results with a zero Meta.
func ReadJSON(r io.Reader) (Results, error) {
	var raw json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return Results{}, err
	}
	var res Results
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		err := json.Unmarshal(t, &res.Rows)
		return res, err
	}
	err := json.Unmarshal(raw, &res)
	return res, err
}

// writeParams is WriteTable for a parameter experiment: one line per
// row, with the value (e.Value, else the median time), where it was
// measured, and its range over the rounds.
func writeParams(w io.Writer, e Experiment, rows []Row) error {
	value := func(r Row) float64 { return r.MedianNs }
	if e.Value != nil {
		value = e.Value
	}
	fmt.Fprintf(w, "%s: %s, median of the rounds\n\n", e.Name, e.Measure)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tvalue\tmeasured at\tmin\tmax\t")
	n := 0
	for _, r := range rows {
		if r.Experiment != e.Name {
			continue
		}
		at := "-"
		if r.Bytes > 0 {
			at = FormatSize(r.Bytes)
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%s\t%.4g\t%.4g\t\n", r.Variant, value(r), at, r.MinNs, r.MaxNs)
		n++
	}
	if n == 0 {
		_, err := fmt.Fprintf(w, "%s: no measurements\n", e.Name)
		return err
	}
	return tw.Flush()
}
