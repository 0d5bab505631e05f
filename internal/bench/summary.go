package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// NotifyVariant is the name of the notified-access variant that the
// summary compares the classic variants against.
const NotifyVariant = "put-notify"

// Ratio is one line of the summary: at one size of one experiment, the
// median time of the best (fastest) classic variant divided by that of
// put-notify. Above 1, notified access is faster.
type Ratio struct {
	// Experiment is the experiment's name.
	Experiment string `json:"experiment"`
	// Bytes is the size of the measurement.
	Bytes int `json:"bytes"`
	// Classic is the name of the fastest classic variant at this size.
	Classic string `json:"classic"`
	// ClassicNs is the median time of Classic, in nanoseconds.
	ClassicNs float64 `json:"classic_ns"`
	// NotifyNs is the median time of put-notify, in nanoseconds.
	NotifyNs float64 `json:"notify_ns"`
	// Ratio is ClassicNs / NotifyNs.
	Ratio float64 `json:"ratio"`
}

// Summarize returns, per size of e's rows in the order they first
// appear, the ratio of the best classic variant to put-notify, as the
// ratio lines of WriteTable define it. Rows of other experiments are
// ignored; sizes without a put-notify row, without a classic row, or
// with a put-notify time that is not positive give no ratio, and an
// experiment without put-notify gives none at all.
func Summarize(e Experiment, rows []Row) []Ratio {
	classic := map[string]bool{}
	for _, v := range e.Variants {
		classic[v.Name] = v.Classic
	}
	var sizes []int
	notify := map[int]float64{}
	best := map[int]Row{}
	for _, r := range rows {
		if r.Experiment != e.Name {
			continue
		}
		if !slices.Contains(sizes, r.Bytes) {
			sizes = append(sizes, r.Bytes)
		}
		switch {
		case r.Variant == NotifyVariant:
			notify[r.Bytes] = r.MedianNs
		case classic[r.Variant]:
			if b, ok := best[r.Bytes]; !ok || r.MedianNs < b.MedianNs {
				best[r.Bytes] = r
			}
		}
	}
	var out []Ratio
	for _, s := range sizes {
		n, ok := notify[s]
		b, okb := best[s]
		if !ok || !okb || n <= 0 {
			continue
		}
		out = append(out, Ratio{Experiment: e.Name, Bytes: s, Classic: b.Variant,
			ClassicNs: b.MedianNs, NotifyNs: n, Ratio: b.MedianNs / n})
	}
	return out
}

// WriteSummary writes ratios as an aligned text table: one line per
// experiment and size with the best classic variant, its median time,
// put-notify's and their ratio. With no ratios it writes a line saying
// so.
func WriteSummary(w io.Writer, ratios []Ratio) error {
	if len(ratios) == 0 {
		_, err := fmt.Fprintln(w, "summary: no experiment compares put-notify with a classic variant")
		return err
	}
	fmt.Fprintln(w, "summary: best classic variant / put-notify, median times in ns (above 1: notified access is faster)")
	fmt.Fprintln(w)
	// Right-aligned numbers; the names, padded to one width, stay
	// left-aligned.
	ew, cw := len("experiment"), len("best classic")
	for _, r := range ratios {
		ew, cw = max(ew, len(r.Experiment)), max(cw, len(r.Classic))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tsize\t%-*s\tclassic\tput-notify\tratio\t\n", ew, "experiment", cw, "best classic")
	for _, r := range ratios {
		size := FormatSize(r.Bytes)
		if e, ok := Lookup(r.Experiment); ok {
			size = e.SizeLabel(r.Bytes)
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%-*s\t%.0f\t%.0f\t%.2f\t\n", ew, r.Experiment, size, cw, r.Classic,
			r.ClassicNs, r.NotifyNs, r.Ratio)
	}
	return tw.Flush()
}
