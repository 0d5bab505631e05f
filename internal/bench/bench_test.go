package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPingPongVariants: every variant runs at 8 B and 4 KiB, checks each
// of its messages, and yields one row per variant and size.
// Both synchronization strategies.
func TestPingPongVariants(t *testing.T) {
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) {
			vs := testVariantNames(PingPong())
			sizes := []int{8, 4096}
			rows, err := runJob(PingPong(), 2, Config{Sizes: sizes, Variants: vs, Iters: 5, Rounds: 3, Warmup: 2, Strategy: st})
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, rows, rowsWant{experiment: "pingpong", variants: vs, sizes: sizes, ranks: 2, iters: 5, rounds: 3, unsound: "unsync"}, nil)
		})
	}
}

// TestPingPongDetectsCorruption: a message whose last word is damaged on
// its way out fails the run, for every variant that checks its data (the
// unsync receiver would wait for the right word forever).
func TestPingPongDetectsCorruption(t *testing.T) {
	for _, v := range testVariantNames(PingPong()) {
		if v == "unsync" {
			continue
		}
		t.Run(v, func(t *testing.T) {
			cfg := Config{Sizes: []int{64}, Variants: []string{v}, Iters: 4, Rounds: 1, Warmup: -1,
				// Both ranks call it: damage the third message, whoever sends it.
				Corrupt: corruptHook(t, v, func(n int32, msg []int64) {
					if n == 3 {
						msg[len(msg)-1]++
					}
				})}
			_, err := runJob(PingPong(), 2, cfg)
			wantNotDelivered(t, err, v, "a damaged message")
		})
	}
}

// TestCheck: bad sizes and unknown variants are refused before the run.
func TestCheck(t *testing.T) {
	e := PingPong()
	for _, cfg := range []Config{
		{Sizes: []int{4}},
		{Sizes: []int{12}},
		{Sizes: []int{MaxSize + 8}},
		{Variants: []string{"put-notify", "carrier-pigeon"}},
		{Iters: -1},
	} {
		if err := e.Check(cfg); err == nil {
			t.Errorf("Check(%+v) accepted", cfg)
		}
	}
	if err := e.Check(Config{Sizes: []int{8, 1 << 20}, Variants: []string{"fence"}}); err != nil {
		t.Error(err)
	}
	if _, err := runJob(PingPong(), 2, Config{Sizes: []int{12}}); err == nil {
		t.Error("run with a 12-byte size succeeded")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"8": 8, "64B": 64, "1K": 1024, "4k": 4096, "64KiB": 64 << 10, "1M": 1 << 20, "2MB": 2 << 20, "1G": 1 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "K", "-8", "1T", "eight", "1.5K", "99999999999"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
	got, err := ParseSizes("8,64,1K,1M")
	if want := []int{8, 64, 1024, 1 << 20}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSizes = %v, %v, want %v", got, err, want)
	}
	for n, want := range map[int]string{8: "8 B", 1000: "1000 B", 4096: "4 KiB", 1536: "1536 B", 1 << 20: "1 MiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// sampleRows are rows as a run makes them.
func sampleRows() []Row {
	var rows []Row
	for _, size := range []int{8, 4096} {
		for i, v := range []string{"send-recv", "put-flag", "put-notify", "unsync"} {
			med := float64(100*(4-i)) + float64(size)/8
			rows = append(rows, Row{Experiment: "pingpong", Variant: v, Bytes: size, Ranks: 2, Iters: 10, Rounds: 3,
				MedianNs: med, MinNs: med - 1, MaxNs: med + 1.5, P10Ns: med - 0.5, P90Ns: med + 1,
				MBps: float64(size) / med * 1e3, Unsound: v == "unsync"})
		}
	}
	return rows
}

// sampleMeta is the metadata of a run as narmabench makes it.
func sampleMeta() Meta {
	m := NewMeta()
	m.Transport, m.Launcher, m.Strategy, m.JobRanks = "local", "none", "deferred", 2
	return m
}

// checkSpread checks that the times of r are in order: min <= p10 <=
// median <= p90 <= max.
func checkSpread(t *testing.T, r Row) {
	t.Helper()
	if !(r.MinNs <= r.P10Ns && r.P10Ns <= r.MedianNs && r.MedianNs <= r.P90Ns && r.P90Ns <= r.MaxNs) {
		t.Errorf("%s %s %d B: min %g, p10 %g, median %g, p90 %g, max %g: out of order",
			r.Experiment, r.Variant, r.Bytes, r.MinNs, r.P10Ns, r.MedianNs, r.P90Ns, r.MaxNs)
	}
}

func TestStatsOf(t *testing.T) {
	for _, c := range []struct {
		times []float64
		want  roundStats
	}{
		{nil, roundStats{}},
		{[]float64{7}, roundStats{median: 7, min: 7, max: 7, p10: 7, p90: 7}},
		{[]float64{20, 10}, roundStats{median: 15, min: 10, max: 20, p10: 11, p90: 19}},
		{[]float64{5, 1, 4, 2, 3}, roundStats{median: 3, min: 1, max: 5, p10: 1.4, p90: 4.6}},
		// 11 times: p10 and p90 fall on the second and the tenth.
		{[]float64{100, 0, 10, 20, 30, 40, 50, 60, 70, 80, 90}, roundStats{median: 50, min: 0, max: 100, p10: 10, p90: 90}},
	} {
		got := statsOf(c.times)
		const eps = 1e-9
		if math.Abs(got.median-c.want.median) > eps || got.min != c.want.min || got.max != c.want.max ||
			math.Abs(got.p10-c.want.p10) > eps || math.Abs(got.p90-c.want.p90) > eps {
			t.Errorf("statsOf(%v) = %+v, want %+v", c.times, got, c.want)
		}
		var r Row
		r.setTimes(c.times)
		checkSpread(t, r)
		if med, lo, hi := summarize(c.times); med != got.median || lo != got.min || hi != got.max {
			t.Errorf("summarize(%v) = %g, %g, %g; statsOf says %+v", c.times, med, lo, hi, got)
		}
	}
}

// TestAppendRowsSpread: the rows of appendRows carry the spread of their
// times, in order.
func TestAppendRowsSpread(t *testing.T) {
	vs := []Variant{{Name: "a"}, {Name: "b", Unsound: true}}
	times := [][]float64{{3, 1, 2, 9, 4}, {8, 8, 8}}
	rows := appendRows(nil, "toy", vs, measured{times: times, iters: []int{10, 7}}, 64, 2, 5, 64)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	if r := rows[0]; r.MedianNs != 3 || r.MinNs != 1 || r.MaxNs != 9 || !(r.P10Ns > 1 && r.P10Ns < 2) || !(r.P90Ns > 4 && r.P90Ns < 9) {
		t.Errorf("row %+v", r)
	}
	if r := rows[1]; r.P10Ns != 8 || r.P90Ns != 8 || !r.Unsound || r.Iters != 7 {
		t.Errorf("row %+v", r)
	}
	for _, r := range rows {
		checkSpread(t, r)
	}
}

// TestWriteCSV: the CSV that WriteCSV writes parses, has a record per
// row with the row's values under their names, the spread in order, and
// the metadata on every record.
func TestWriteCSV(t *testing.T) {
	rows, meta := sampleRows(), sampleMeta()
	var b bytes.Buffer
	if err := WriteCSV(&b, meta, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(rows) {
		t.Fatalf("%d records, want a header and %d rows", len(recs), len(rows))
	}
	if !reflect.DeepEqual(recs[0], CSVHeader) {
		t.Errorf("header %v, want %v", recs[0], CSVHeader)
	}
	// The columns of the first version keep their places.
	if old := []string{"experiment", "variant", "bytes", "ranks", "iters", "rounds", "median_ns", "min_ns", "max_ns",
		"mb_per_s", "unsound", "overlap_pct"}; !reflect.DeepEqual(recs[0][:len(old)], old) {
		t.Errorf("header %v does not begin with %v", recs[0], old)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	num := func(rec []string, name string) float64 {
		t.Helper()
		v, err := strconv.ParseFloat(rec[col[name]], 64)
		if err != nil {
			t.Errorf("column %s: %v", name, err)
		}
		return v
	}
	wantMeta := map[string]string{"transport": "local", "launcher": "none", "strategy": "deferred", "job_ranks": "2",
		"commit": meta.Commit, "go_version": runtime.Version(), "goos": runtime.GOOS, "goarch": runtime.GOARCH,
		"num_cpu": strconv.Itoa(runtime.NumCPU()), "gomaxprocs": strconv.Itoa(runtime.GOMAXPROCS(0)), "date": meta.Date}
	if len(wantMeta) != len(CSVMetaColumns) {
		t.Errorf("metadata columns %v, the test knows %d", CSVMetaColumns, len(wantMeta))
	}
	for i, r := range rows {
		rec := recs[i+1]
		got := Row{Experiment: rec[col["experiment"]], Variant: rec[col["variant"]], Bytes: int(num(rec, "bytes")),
			Ranks: int(num(rec, "ranks")), Iters: int(num(rec, "iters")), Rounds: int(num(rec, "rounds")),
			MedianNs: num(rec, "median_ns"), MinNs: num(rec, "min_ns"), MaxNs: num(rec, "max_ns"),
			P10Ns: num(rec, "p10_ns"), P90Ns: num(rec, "p90_ns"), Unsound: rec[col["unsound"]] == "true"}
		if want := r; got.Experiment != want.Experiment || got.Variant != want.Variant || got.Bytes != want.Bytes ||
			got.MedianNs != want.MedianNs || got.MinNs != want.MinNs || got.MaxNs != want.MaxNs ||
			got.P10Ns != want.P10Ns || got.P90Ns != want.P90Ns || got.Unsound != want.Unsound {
			t.Errorf("record %v for row %+v", rec, r)
		}
		checkSpread(t, got)
		for name, want := range wantMeta {
			if rec[col[name]] != want {
				t.Errorf("record %d: %s = %q, want %q", i, name, rec[col[name]], want)
			}
		}
	}
	if _, err := time.Parse(time.RFC3339, meta.Date); err != nil {
		t.Errorf("date: %v", err)
	}
}

// TestWriteJSON: ReadJSON reads back what WriteJSON writes, an object of
// metadata and rows, and the bare array of rows of earlier versions.
func TestWriteJSON(t *testing.T) {
	rows, meta := sampleRows(), sampleMeta()
	var b bytes.Buffer
	if err := WriteJSON(&b, meta, rows); err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Meta map[string]any   `json:"meta"`
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(b.Bytes(), &shape); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"transport", "launcher", "strategy", "job_ranks", "commit", "go_version", "goos", "goarch", "num_cpu", "gomaxprocs", "date"} {
		if _, ok := shape.Meta[k]; !ok {
			t.Errorf("meta lacks %q: %v", k, shape.Meta)
		}
	}
	for _, k := range []string{"median_ns", "min_ns", "max_ns", "p10_ns", "p90_ns"} {
		if _, ok := shape.Rows[0][k]; !ok {
			t.Errorf("row lacks %q: %v", k, shape.Rows[0])
		}
	}
	got, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Results{Meta: meta, Rows: rows}) {
		t.Errorf("JSON round trip: %+v, want %+v", got, Results{Meta: meta, Rows: rows})
	}
	for _, r := range got.Rows {
		checkSpread(t, r)
	}

	b.Reset()
	if err := WriteJSON(&b, meta, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadJSON(&b); err != nil || got.Rows == nil || len(got.Rows) != 0 || got.Meta != meta {
		t.Errorf("no rows: %+v, %v, want the metadata and an empty list", got, err)
	}

	old, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadJSON(bytes.NewReader(old)); err != nil || !reflect.DeepEqual(got, Results{Rows: rows}) {
		t.Errorf("ReadJSON of a bare array: %+v, %v", got, err)
	}
	if _, err := ReadJSON(strings.NewReader(`{"rows": 3}`)); err == nil {
		t.Error("ReadJSON of a bad object: no error")
	}
}

// TestCommitOf: the commit of a build is its VCS revision, marked dirty
// if the tree had changes, else the module's version.
func TestCommitOf(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "unknown"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "unknown"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab"}}, "v0.0.0-20260101000000-0123456789ab"},
		{vcs("abc123", "false"), "abc123"},
		{vcs("abc123", "true"), "abc123+dirty"},
	} {
		if got := commitOf(c.bi); got != c.want {
			t.Errorf("commitOf(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, PingPong(), sampleRows()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"8 B", "4 KiB", "send-recv", "put-notify", "unsync*", "* unsync:", "median of 3 rounds",
		// The widest spread, (p90 - p10) / median: unsync at 8 B, 1.5 / 101.
		"(p90 - p10) / median: up to 1.5% (unsync at 8 B)", "every row's spread over the rounds (p10_ns, p90_ns, min_ns, max_ns): --csv or --json"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Best classic at 8 B: put-flag (300) against put-notify (200).
	if !strings.Contains(out, "put-flag     1.50") {
		t.Errorf("table lacks the ratio line of 8 B:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	var header string
	for _, l := range lines {
		if strings.Contains(l, "variant") {
			header = l
			break
		}
	}
	if strings.Index(header, "4 KiB") <= strings.Index(header, "8 B") {
		t.Errorf("sizes not in order in %q", header)
	}
	if strings.Contains(out, "MPI") {
		t.Errorf("table without MPI rows compares with MPI:\n%s", out)
	}
}

// TestWriteTableMPI: with rows of the MPI reference programs, the table
// also gives the ratio of the fastest of them to put-notify, per size.
func TestWriteTableMPI(t *testing.T) {
	rows := sampleRows()
	mpi := func(v string, size int, ns float64) Row {
		return Row{Experiment: "pingpong", Variant: MPIPrefix + v, Bytes: size, Ranks: 2, Iters: 10, Rounds: 3,
			MedianNs: ns, MinNs: ns, MaxNs: ns, P10Ns: ns, P90Ns: ns}
	}
	// put-notify is 200 ns at 8 B in sampleRows: the fastest MPI program
	// there is put-flag at 150 ns, ratio 0.75.
	rows = append(rows, mpi("send-recv", 8, 180), mpi("put-flag", 8, 150))
	var b bytes.Buffer
	if err := WriteTable(&b, PingPong(), rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"best MPI variant / narma's put-notify", "8 B  mpi-put-flag     0.75"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "4 KiB  mpi-") {
		t.Errorf("a ratio to MPI at a size without MPI rows:\n%s", out)
	}
}

// TestCheckSizesAgreesWithRun: the sizes CheckSizes refuses, Run refuses
// too before it measures; and the small sizes it accepts, Run takes.
func TestCheckSizesAgreesWithRun(t *testing.T) {
	for _, c := range []struct {
		experiment string
		ranks      int
		sizes      []int
		ok         bool
	}{
		{"stencil", 4, []int{8}, false},      // 1 column for 4 ranks
		{"stencil", 4, []int{64, 56}, false}, // 7 columns for 4 ranks
		{"stencil", 2, []int{MaxStencilSize + 8}, false},
		{"stencil", 17, nil, false}, // the default 256 B: 32 columns, 2 short for 17 ranks
		{"stencil", 2, []int{32}, true},
		{"halo", 2, []int{MaxHaloSize + 8}, false},
		{"halo", 2, []int{64}, true},
		{"loggp", 2, []int{8}, false},
		{"loggp", 2, []int{64, 64}, false},
		{"loggp", 2, []int{8, 64}, true},
		{"pingpong", 2, []int{8}, true},
	} {
		e, ok := Lookup(c.experiment)
		if !ok {
			t.Fatalf("no experiment %s", c.experiment)
		}
		cfg := Config{Sizes: c.sizes, Variants: []string{e.Variants[0].Name}, Iters: 1, Rounds: 1, Warmup: -1}
		err := e.CheckSizes(cfg, c.ranks)
		if (err == nil) != c.ok {
			t.Errorf("%s on %d ranks at %v: CheckSizes says %v, want ok %v", c.experiment, c.ranks, c.sizes, err, c.ok)
		}
		_, rerr := runJobTimeout(e, c.ranks, cfg)
		switch {
		case err != nil && (rerr == nil || !strings.Contains(rerr.Error(), err.Error())):
			t.Errorf("%s on %d ranks at %v: CheckSizes says %q, Run %v", c.experiment, c.ranks, c.sizes, err, rerr)
		case err == nil && rerr != nil:
			t.Errorf("%s on %d ranks at %v: CheckSizes accepts, Run fails: %v", c.experiment, c.ranks, c.sizes, rerr)
		}
	}
}
