package bench

import (
	"strings"
	"testing"
)

// TestWriteTableBudgetCut: a variant that ran fewer iterations per round
// than the others at its size is named under the table with its count;
// a table without one says nothing of the budget.
func TestWriteTableBudgetCut(t *testing.T) {
	rows := sampleRows()
	var b strings.Builder
	if err := WriteTable(&b, PingPong(), rows); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "budget") {
		t.Errorf("a table without cuts speaks of the budget:\n%s", b.String())
	}
	rows[1].Iters = 3 // put-flag at 8 B
	b.Reset()
	if err := WriteTable(&b, PingPong(), rows); err != nil {
		t.Fatal(err)
	}
	if want := "time budget per variant and size (--budget): put-flag at 8 B (3 of 10)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

// TestWriteTableRanks: the title says how many ranks the rows ran on.
func TestWriteTableRanks(t *testing.T) {
	var b strings.Builder
	if err := WriteTable(&b, PingPong(), sampleRows()); err != nil {
		t.Fatal(err)
	}
	if want := "pingpong: half round trip in ns, median of 3 rounds, 2 ranks\n"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("table does not begin with %q:\n%s", want, b.String())
	}
}

// TestCholeskyColumns: Cholesky's columns are tiles of b x b, as list
// says, in the table, its ratios and its spread, and in the summary.
func TestCholeskyColumns(t *testing.T) {
	var rows []Row
	for _, size := range []int{64, 1024} {
		for i, v := range []string{"send-recv", "one-sided", "put-notify"} {
			med := float64(1000 * (i + 1))
			rows = append(rows, Row{Experiment: "cholesky", Variant: v, Bytes: size, Ranks: 2, Iters: 5, Rounds: 3,
				MedianNs: med, MinNs: med - 10, MaxNs: med + 10, P10Ns: med - 5, P90Ns: med + 5})
		}
	}
	e := Cholesky()
	var b strings.Builder
	if err := WriteTable(&b, e, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"8x8", "128x128", "columns: tiles of b x b float64 elements", "      8x8  send-recv", "(send-recv at 8x8)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"64 B", "1 KiB"} {
		if strings.Contains(out, bad) {
			t.Errorf("table shows %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(e.Summary, "8x8 to 128x128") {
		t.Errorf("list says %q", e.Summary)
	}
	b.Reset()
	if err := WriteSummary(&b, Summarize(e, rows)); err != nil || !strings.Contains(b.String(), "128x128") || strings.Contains(b.String(), "KiB") {
		t.Errorf("summary (%v):\n%s", err, b.String())
	}
}

// TestOverlapNote: a share below 0 gets a note under the table that says
// what it means, with the lowest one; shares of 0 and above get none.
func TestOverlapNote(t *testing.T) {
	row := func(v string, size int, pct float64) Row {
		return Row{Experiment: "overlap", Variant: v, Bytes: size, Ranks: 2, Iters: 10, Rounds: 3,
			MedianNs: 1000, MinNs: 900, MaxNs: 1100, P10Ns: 950, P90Ns: 1050, OverlapPct: pct}
	}
	rows := []Row{row("send-recv", 8, 12), row("put-notify", 8, 0), row("send-recv", 4096, 35)}
	var b strings.Builder
	if err := WriteTable(&b, Overlap(), rows); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Below 0") {
		t.Errorf("a note without a share below 0:\n%s", b.String())
	}
	rows = append(rows, row("put-fence", 4096, -243.4), row("put-flush", 8, -20))
	b.Reset()
	if err := WriteTable(&b, Overlap(), rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"share = 100 * (t_comm + t_comp - t_total) / t_comm", "not clamped at 0",
		"Below 0 (down to -243%, put-fence at 4 KiB): both together took longer than the two apart", "-243.4"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestMetaDescribe: the line above the tables says whether the ranks were
// goroutines or processes, the transport, the strategy and the commit.
func TestMetaDescribe(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		m    Meta
		want string
	}{
		{Meta{Transport: "local", Launcher: "none", Strategy: "default", Commit: rev},
			"run: ranks as goroutines of one process over the local transport, strategy default, commit 0123456789ab"},
		{Meta{Transport: "shm", Launcher: "narmarun", Strategy: "deferred", Commit: rev + "+dirty"},
			"run: ranks as processes under narmarun over the shm transport, strategy deferred, commit 0123456789ab+dirty"},
		{Meta{Transport: "tcp", Launcher: "slurm", Strategy: "immediate", Commit: "unknown"},
			"run: ranks as processes under slurm over the tcp transport, strategy immediate, commit unknown"},
		{Meta{Transport: "local", Launcher: "none", Strategy: "default", Commit: "v0.0.0-20260101000000-0123456789ab"},
			"run: ranks as goroutines of one process over the local transport, strategy default, commit v0.0.0-20260101000000-0123456789ab"},
	} {
		if got := c.m.Describe(); got != c.want {
			t.Errorf("Describe() = %q, want %q", got, c.want)
		}
	}
}
