package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// patience bounds every wait of these tests; nothing should come close.
const patience = 30 * time.Second

// built holds the binaries the tests build once: narmarun itself, for
// the tests that signal it, testprog and narmaprog.
var built struct {
	once                          sync.Once
	dir                           string
	narmarun, testprog, narmaprog string
	err                           error
}

func TestMain(m *testing.M) {
	status := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(status)
}

// binaries builds narmarun, testprog and narmaprog, once per test run
// (narmaProgram returns the last).
func binaries(t *testing.T) (narmarun, testprog string) {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "narmarun-test-"); built.err != nil {
			return
		}
		built.narmarun = filepath.Join(built.dir, "narmarun")
		built.testprog = filepath.Join(built.dir, "testprog")
		built.narmaprog = filepath.Join(built.dir, "narmaprog")
		for _, b := range [][2]string{{built.narmarun, "."}, {built.testprog, "./internal/testprog"}, {built.narmaprog, "./internal/narmaprog"}} {
			out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput()
			if err != nil {
				built.err = fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.narmarun, built.testprog
}

// narmaProgram returns the path of narmaprog, a narma program.
func narmaProgram(t *testing.T) string {
	t.Helper()
	binaries(t)
	return built.narmaprog
}

// script writes a shell script to a fresh directory and returns the
// script's path and the directory (which the script gets as $1 when
// run with runScript).
func script(t *testing.T, body string) (path, dir string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "rank.sh")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

// result is what an in-process run of narmarun did.
type result struct {
	status         int
	stdout, stderr string
	elapsed        time.Duration
}

// runNarmarun runs narmarun in-process with args, and a private TMPDIR
// that must be empty again when it returns.
func runNarmarun(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	status := run(ctx, args, &stdout, &stderr)
	res := result{status, stdout.String(), stderr.String(), time.Since(start)}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("narmarun left %v in its temporary directory", left)
	}
	t.Logf("narmarun %s: status %d after %v\nstdout:\n%s\nstderr:\n%s",
		strings.Join(args, " "), res.status, res.elapsed.Round(time.Millisecond), res.stdout, res.stderr)
	return res
}

// runScript runs script body under narmarun with flags; the script gets
// its directory as $1.
func runScript(t *testing.T, body string, flags ...string) (result, string) {
	t.Helper()
	path, dir := script(t, body)
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	return runNarmarun(t, ctx, append(flags, "/bin/sh", path, dir)...), dir
}

// appear waits until the files exist, and reports whether they did
// within patience.
func appear(files ...string) bool {
	deadline := time.Now().Add(patience)
	for _, f := range files {
		for {
			if _, err := os.Stat(f); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return true
}

// pidFiles returns the names of the pid files of n ranks in dir.
func pidFiles(dir string, n int) []string {
	var files []string
	for r := range n {
		files = append(files, filepath.Join(dir, fmt.Sprintf("pid.%d", r)))
	}
	return files
}

// readPIDs reads the pid files rank scripts wrote in dir.
func readPIDs(t *testing.T, dir string, n int) []int {
	t.Helper()
	files := pidFiles(dir, n)
	if !appear(files...) {
		t.Fatalf("the ranks did not all write their pid in %s", dir)
	}
	pids := make([]int, n)
	for r, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(string(b), &pids[r]); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return pids
}

// writePID is shell code that records the rank's pid in $1/pid.$RANK.
const writePID = `echo $$ > "$1/pid.$NARMA_RANK.tmp" && mv "$1/pid.$NARMA_RANK.tmp" "$1/pid.$NARMA_RANK"
`
