package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// summaryExperiment is a hand-made experiment: two classic variants, an
// unsound one that is not classic, and put-notify.
func summaryExperiment() Experiment {
	return Experiment{Name: "toy", Measure: "time per toy", Variants: []Variant{
		{Name: "send-recv", Classic: true},
		{Name: "pscw", Classic: true},
		{Name: "unsync", Unsound: true},
		{Name: "put-notify"},
	}}
}

func TestSummarize(t *testing.T) {
	e := summaryExperiment()
	row := func(v string, size int, ns float64) Row {
		return Row{Experiment: "toy", Variant: v, Bytes: size, MedianNs: ns}
	}
	rows := []Row{
		row("send-recv", 8, 300), row("pscw", 8, 200), row("unsync", 8, 1), row("put-notify", 8, 100),
		row("send-recv", 64, 400), row("pscw", 64, 900), row("unsync", 64, 1), row("put-notify", 64, 800),
		row("send-recv", 512, 400),                                         // no put-notify at 512 B: no ratio
		row("put-notify", 4096, 50),                                        // no classic variant at 4 KiB: no ratio
		{Experiment: "other", Variant: "send-recv", Bytes: 8, MedianNs: 1}, // another experiment
	}
	got := Summarize(e, rows)
	want := []Ratio{
		{Experiment: "toy", Bytes: 8, Classic: "pscw", ClassicNs: 200, NotifyNs: 100, Ratio: 2},
		{Experiment: "toy", Bytes: 64, Classic: "send-recv", ClassicNs: 400, NotifyNs: 800, Ratio: 0.5},
	}
	if len(got) != len(want) {
		t.Fatalf("Summarize: %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Experiment != w.Experiment || g.Bytes != w.Bytes || g.Classic != w.Classic ||
			g.ClassicNs != w.ClassicNs || g.NotifyNs != w.NotifyNs || math.Abs(g.Ratio-w.Ratio) > 1e-12 {
			t.Errorf("ratio %d: %+v, want %+v", i, g, w)
		}
	}

	// The table's ratio lines agree.
	var table bytes.Buffer
	if err := WriteTable(&table, e, rows); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"pscw", "2.00", "send-recv", "0.50"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, table.String())
		}
	}

	var b bytes.Buffer
	if err := WriteSummary(&b, got); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"best classic variant / put-notify", "toy", "8 B", "64 B", "2.00", "0.50"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, b.String())
		}
	}
}

// TestSummarizeWithoutNotify: an experiment without put-notify (or
// without rows) gives no ratio, and the summary says so.
func TestSummarizeWithoutNotify(t *testing.T) {
	e := Experiment{Name: "plain", Variants: []Variant{{Name: "a", Classic: true}, {Name: "b", Classic: true}}}
	rows := []Row{{Experiment: "plain", Variant: "a", Bytes: 8, MedianNs: 10}, {Experiment: "plain", Variant: "b", Bytes: 8, MedianNs: 20}}
	if got := Summarize(e, rows); len(got) != 0 {
		t.Errorf("Summarize without put-notify: %+v, want none", got)
	}
	if got := Summarize(summaryExperiment(), nil); len(got) != 0 {
		t.Errorf("Summarize without rows: %+v, want none", got)
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, nil); err != nil || !strings.Contains(b.String(), "no experiment") {
		t.Errorf("WriteSummary(nil): %v, %q", err, b.String())
	}
}

// TestSummarizeSuite: every experiment of the suite with a put-notify
// variant has a classic variant to compare it with.
func TestSummarizeSuite(t *testing.T) {
	for _, e := range Experiments() {
		var rows []Row
		for i, v := range e.Variants {
			rows = append(rows, Row{Experiment: e.Name, Variant: v.Name, Bytes: 8, MedianNs: float64(10 + i)})
		}
		_, hasNotify := variantIndex(e, NotifyVariant)
		if got := Summarize(e, rows); hasNotify != (len(got) == 1) {
			t.Errorf("%s: put-notify %v, ratios %+v", e.Name, hasNotify, got)
		}
	}
}

func variantIndex(e Experiment, name string) (int, bool) {
	for i, v := range e.Variants {
		if v.Name == name {
			return i, true
		}
	}
	return -1, false
}
