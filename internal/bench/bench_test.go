package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
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
				MedianNs: med, MinNs: med - 1, MaxNs: med + 1.5, MBps: float64(size) / med * 1e3, Unsound: v == "unsync"})
		}
	}
	return rows
}

func TestWriteCSV(t *testing.T) {
	rows := sampleRows()
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
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
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	for i, r := range rows {
		rec := recs[i+1]
		med, err := strconv.ParseFloat(rec[col["median_ns"]], 64)
		if rec[col["variant"]] != r.Variant || rec[col["bytes"]] != strconv.Itoa(r.Bytes) || err != nil || med != r.MedianNs ||
			rec[col["unsound"]] != strconv.FormatBool(r.Unsound) {
			t.Errorf("record %v for row %+v", rec, r)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	rows := sampleRows()
	var b bytes.Buffer
	if err := WriteJSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	var got []Row
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("JSON round trip: %+v, want %+v", got, rows)
	}
	b.Reset()
	if err := WriteJSON(&b, nil); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("no rows: %q, %v, want []", b.String(), err)
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, PingPong(), sampleRows()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"8 B", "4 KiB", "send-recv", "put-notify", "unsync*", "* unsync:", "median of 3 rounds"} {
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
}
