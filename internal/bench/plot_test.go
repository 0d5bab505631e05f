package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func plotRows() []Row {
	var rows []Row
	for i, v := range []string{"send-recv", "pscw", "unsync", "put-notify"} {
		for _, size := range []int{8, 64, 512, 4 << 10, 32 << 10} {
			rows = append(rows, Row{Experiment: "toy", Variant: v, Bytes: size,
				MedianNs: float64(1000*(i+1)) + float64(size)/3})
		}
	}
	return rows
}

// TestWritePlot: WritePlot writes a non-empty SVG or PNG, as the
// extension says.
func TestWritePlot(t *testing.T) {
	dir := t.TempDir()
	e := summaryExperiment()
	for _, c := range []struct {
		name  string
		magic [][]byte
	}{
		{"toy.svg", [][]byte{[]byte("<svg"), []byte("<?xml")}},
		{"toy.PNG", [][]byte{[]byte("\x89PNG\r\n\x1a\n")}},
	} {
		path := filepath.Join(dir, c.name)
		if err := WritePlot(path, e, plotRows()); err != nil {
			t.Fatalf("WritePlot %s: %v", c.name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, m := range c.magic {
			ok = ok || bytes.HasPrefix(bytes.TrimSpace(b), m)
		}
		if len(b) < 100 || !ok {
			t.Errorf("%s: %d bytes starting %q", c.name, len(b), b[:min(len(b), 16)])
		}
		if c.name == "toy.svg" {
			for _, s := range []string{"put-notify", "unsync*", "toy: time per toy"} {
				if !bytes.Contains(b, []byte(s)) {
					t.Errorf("%s lacks %q", c.name, s)
				}
			}
		}
	}
}

// TestWritePlotErrors: an unknown format or nothing to plot fail, and
// write no file.
func TestWritePlotErrors(t *testing.T) {
	dir := t.TempDir()
	e := summaryExperiment()
	for _, c := range []struct {
		name string
		rows []Row
	}{
		{"toy.gif", plotRows()},
		{"toy", plotRows()},
		{"empty.svg", nil},
		{"zero.png", []Row{{Experiment: "toy", Variant: "pscw", Bytes: 8}}},
	} {
		path := filepath.Join(dir, c.name)
		if err := WritePlot(path, e, c.rows); err == nil {
			t.Errorf("WritePlot %s: no error", c.name)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("WritePlot %s wrote a file", c.name)
		}
	}
}

// TestWritePlotSpread: rows with their 10th and 90th percentiles get a
// bar from one to the other at each point; rows without get none.
func TestWritePlotSpread(t *testing.T) {
	dir := t.TempDir()
	e := summaryExperiment()
	plain := plotRows()
	spread := plotRows()
	for i := range spread {
		r := &spread[i]
		r.P10Ns, r.P90Ns = r.MedianNs*0.8, r.MedianNs*1.3
	}
	strokes := func(name string, rows []Row) int {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := WritePlot(path, e, rows); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("<path"))
	}
	without, with := strokes("plain.svg", plain), strokes("spread.svg", spread)
	// A bar and its two caps per point.
	if want := without + 3*len(spread); with < want {
		t.Errorf("%d strokes with the spread, %d without: want at least %d", with, without, want)
	}
}
