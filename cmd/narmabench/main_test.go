package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narma-rma/narma/internal/bench"
)

// narmabench runs the command with args and returns its status and
// output.
func narmabench(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	status := run(context.Background(), args, &out, &errb)
	return status, out.String(), errb.String()
}

func TestList(t *testing.T) {
	status, out, _ := narmabench("list")
	if status != 0 {
		t.Fatalf("list: status %d", status)
	}
	for _, want := range []string{"pingpong", "send-recv", "put-notify", "get-notify", "unsync*"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
}

// TestUsageErrors: bad command lines exit with status 2 and say what is
// wrong.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"nosuch"}, `no experiment "nosuch"`},
		{[]string{"pingpong", "--sizes", "8,1X"}, `bad size "1X"`},
		{[]string{"pingpong", "--sizes", "12"}, "multiple of 8"},
		{[]string{"pingpong", "--variants", "put-notify,smoke-signal"}, `no variant "smoke-signal"`},
		{[]string{"pingpong", "-n", "3"}, "needs exactly 2 ranks"},
		{[]string{"pingpong", "--iters", "-1"}, "must not be negative"},
		{[]string{"pingpong", "--strategy", "lazy"}, `--strategy "lazy"`},
		{[]string{"pingpong", "--bogus"}, "flag provided but not defined"},
		{[]string{"pingpong", "extra"}, "unexpected arguments"},
	} {
		status, _, errs := narmabench(c.args...)
		if status != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("narmabench %q: status %d, stderr %q; want 2 and %q", c.args, status, errs, c.want)
		}
	}
}

// TestRun: a short run prints the table and writes CSV and JSON files.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	csvFile, jsonFile := filepath.Join(dir, "pp.csv"), filepath.Join(dir, "pp.json")
	status, out, errs := narmabench("pingpong", "--sizes", "8,1K", "--variants", "put-notify,send-recv",
		"--iters", "3", "--rounds", "1", "--strategy", "deferred", "--csv", csvFile, "--json", jsonFile)
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	for _, want := range []string{"put-notify", "send-recv", "1 KiB", "best classic variant / put-notify"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errs != "" {
		t.Errorf("stderr is not a terminal, yet: %q", errs)
	}
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rows []bench.Row
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Errorf("%d JSON rows, want 4", len(rows))
	}
	b, err = os.ReadFile(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 5 {
		t.Errorf("CSV of %d lines, want a header and 4 rows:\n%s", lines, b)
	}

	// JSON to stdout replaces the table.
	status, out, errs = narmabench("pingpong", "--sizes", "8", "--variants", "counter", "--iters", "2", "--rounds", "1", "--json", "-")
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0].Variant != "counter" {
		t.Errorf("--json -: %v, rows %+v from\n%s", err, rows, out)
	}
}
