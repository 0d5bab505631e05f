// Package ranktest runs the jobs of a package's tests on both kinds of
// ranks: first as goroutines of the test process (narma.RunContext, over
// the in-process transport that NARMA_TRANSPORT selects), then as
// processes of the re-executed test binary over the shared-memory
// transport (package testjob). One table of tests thus covers both
// transports, and every rank function is checked the same way in both:
// it reports by returning an error (or by t.Errorf).
//
// A test package starts its jobs with Run (or RunLocal, for ranks that
// coordinate through Go values) and lets its test binary serve as a rank
// with a TestMain:
//
//	func TestMain(m *testing.M) { ranktest.Main(m) }
//
// How a rank process finds its job: the jobs that a test starts with Run
// are numbered in order, per test (*testing.T), the tests being
// deterministic in their calls. For job k of test T, Run starts n
// processes of the test binary with -test.run selecting T alone and
// "T#k" in their environment (testjob.EnvCall). Each process runs T: the
// jobs before the k-th run with goroutine ranks, as in the parent; at the
// k-th, the process joins the job as one rank (narma.Init), runs the
// function, and exits with its verdict, so that nothing of T after the
// job runs in it.
//
// NARMA_TEST_PROCS=0, or a set NARMA_TRANSPORT (which asks for an
// in-process transport), turns the process runs off; they also need
// Linux.
package ranktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/testjob"
)

// Timeout bounds every job, with either kind of rank: a hang fails the
// test instead of blocking CI.
const Timeout = 30 * time.Second

// Procs reports whether Run also runs its jobs with ranks as processes:
// on Linux, unless NARMA_TRANSPORT is set or NARMA_TEST_PROCS=0.
func Procs() bool {
	return runtime.GOOS == "linux" && os.Getenv("NARMA_TRANSPORT") == "" && os.Getenv("NARMA_TEST_PROCS") != "0"
}

// RankProcess reports whether this process is a rank process of a test
// job (one that Run, or another caller of testjob.Run, started). Its
// NARMA_TRANSPORT was the launcher's ("shm"), not a choice of in-process
// transport; Main takes it out of the environment until the process
// joins its job, so that the jobs before run as in the parent. A test
// that skips itself on NARMA_TRANSPORT asks this first, so that it
// reaches its jobs in the rank processes too.
func RankProcess() bool { return testjob.Call() != "" }

// Run runs fn on n ranks and fails the test on error: first with the
// ranks as goroutines (RunErr), then, if Procs, with the ranks as n
// processes of the test binary (see the package comment). In a rank
// process, Run joins the job as a rank if it is the job the process was
// started for, and never returns then; the test's other jobs run as
// goroutines.
func Run(t *testing.T, n int, fn func(c *narma.Comm) error) {
	t.Helper()
	call := nextCall(t)
	if want := testjob.Call(); want != "" {
		if call == want {
			rankMain(t, n, call, fn)
		}
		if err := RunErr(t, n, fn); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := RunErr(t, n, fn); err != nil {
		t.Fatal(err)
	}
	if Procs() {
		runProcs(t, n, call)
	}
}

// RunLocal is Run with goroutine ranks only, for tests whose ranks
// coordinate through Go values (a channel closed by one rank and awaited
// by another, a variable written by one and read by another), which
// processes do not share.
func RunLocal(t *testing.T, n int, fn func(c *narma.Comm) error) {
	t.Helper()
	if err := RunErr(t, n, fn); err != nil {
		t.Fatal(err)
	}
}

// RunErr runs fn on n goroutine ranks under Timeout and returns
// narma.RunContext's error. A job that hangs fails the test, as does a
// RunContext that does not return soon after the deadline (a rank stuck
// outside the library).
func RunErr(t *testing.T, n int, fn func(c *narma.Comm) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	const grace = 15 * time.Second
	done := make(chan error, 1)
	go func() { done <- narma.RunContext(ctx, n, fn) }()
	select {
	case err := <-done:
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("job of %d ranks hung for %v: %v", n, Timeout, err)
		}
		return err
	case <-time.After(Timeout + grace):
		t.Fatalf("RunContext of %d ranks did not return %v after its deadline", n, grace)
		return nil
	}
}

// Main is the body of a TestMain that lets the test binary serve as the
// rank processes of Run: it runs the tests and exits with their status.
// In a rank process the test's Run exits the process at its job; should
// the test end without coming to that job (a test not deterministic in
// its calls), Main fails the process. A package whose TestMain serves
// other calls of testjob.Run too handles those first, then calls Main.
func Main(m *testing.M) {
	if testjob.Call() != "" {
		// The jobs before this process's own replay the parent's, which
		// ran over the in-process transport; NARMA_TRANSPORT here names
		// the job's transport (say fabric, whose every endpoint costs
		// tens of megabytes and a fraction of a second to open). Keep it
		// for Init, and let the replays run as in the parent.
		jobTransport = os.Getenv(inprocTransport)
		os.Unsetenv(inprocTransport)
	}
	code := m.Run()
	if call := testjob.Call(); call != "" {
		fmt.Fprintf(os.Stderr, "ranktest: rank process for %s: the test ended (status %d) without starting that job\n", call, code)
		os.Exit(1)
	}
	os.Exit(code)
}

// inprocTransport is the variable that selects both the in-process
// transport of goroutine ranks and, in a rank process, the job's
// transport (bootstrap's).
const inprocTransport = "NARMA_TRANSPORT"

// jobTransport is, in a rank process, the transport of its job, which
// Main took out of the environment for the replayed jobs.
var jobTransport string

// calls numbers the jobs of each test, so that a rank process can find
// the job it must run. The numbers are per *testing.T, not per name: with
// -count=2 the second run of a test numbers its jobs from 1 again, as
// the rank process (-test.count=1) does.
var calls struct {
	sync.Mutex
	n map[*testing.T]int
}

// nextCall returns the name of t's next job: "T#k" for the k-th.
func nextCall(t *testing.T) string {
	calls.Lock()
	defer calls.Unlock()
	if calls.n == nil {
		calls.n = make(map[*testing.T]int)
	}
	if _, ok := calls.n[t]; !ok {
		t.Cleanup(func() {
			calls.Lock()
			delete(calls.n, t)
			calls.Unlock()
		})
	}
	calls.n[t]++
	return fmt.Sprintf("%s#%d", t.Name(), calls.n[t])
}

// EnvProcsTransport names the transport of the process runs: "shm" (the
// default), "tcp", or "hybrid" (ranks alternate between two pretend
// hosts: shared memory within one, TCP between them).
const EnvProcsTransport = "NARMA_TEST_PROCS_TRANSPORT"

func procTransport() string {
	if t := os.Getenv(EnvProcsTransport); t != "" {
		return t
	}
	return "shm"
}

// runProcs runs job call of the current test with n processes of the
// test binary as the ranks. They run with -test.v so that what the rank
// function logs (t.Errorf) is in their output, which a failure reports.
func runProcs(t *testing.T, n int, call string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout+10*time.Second)
	defer cancel()
	_, err := testjob.RunOn(ctx, procTransport(), n, call,
		"-test.run="+testjob.TestPattern(t.Name()),
		"-test.count=1",
		"-test.short="+strconv.FormatBool(testing.Short()),
		"-test.v")
	if err != nil {
		t.Fatalf("ranks as processes: %v", err)
	}
}

// rankMain is a rank process's part in job call: join the job, run fn,
// leave, and end the process with the verdict: status 0 if fn returned
// nil and the test has not failed (fn may report with t.Errorf), else 1.
// A rank that fails exits at once, without Close's barrier, so that the
// others see a failed peer instead of waiting for it.
func rankMain(t *testing.T, n int, call string, fn func(c *narma.Comm) error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "ranktest: rank process for %s: panic: %v\n%s", call, p, debug.Stack())
		} else {
			// fn called t.FailNow (t.Fatal) or runtime.Goexit: what it
			// logged is in the output already (-test.v).
			fmt.Fprintf(os.Stderr, "ranktest: rank process for %s: the rank function ended the test (t.FailNow or runtime.Goexit)\n", call)
		}
		os.Exit(1)
	}()
	err := rankJob(t, n, fn)
	returned = true
	if err == nil && t.Failed() {
		err = errors.New("the test failed (see its log)")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ranktest: rank process for %s: %v\n", call, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// rankJob joins the job of n ranks, runs fn and, if fn succeeded, leaves
// the job with Close.
func rankJob(t *testing.T, n int, fn func(c *narma.Comm) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if jobTransport != "" {
		os.Setenv(inprocTransport, jobTransport)
	}
	c, err := narma.Init(ctx)
	if err != nil {
		return err
	}
	if c.Size() != n {
		return fmt.Errorf("joined a job of %d ranks, want %d", c.Size(), n)
	}
	if err := callRank(c, fn); err != nil {
		return fmt.Errorf("rank %d: %w", c.Rank(), err)
	}
	if t.Failed() {
		// Leave at once, as on an error.
		return nil
	}
	return c.Close()
}

// callRank runs fn, turning a panic into an error.
func callRank(c *narma.Comm, fn func(c *narma.Comm) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return fn(c)
}

// WholeJobShares reports whether the test's jobs, in this process, run
// over a transport that maps every rank's window memory into every other
// rank: goroutine ranks on the in-process or shared-memory transport, or
// processes over shared memory (Run's default). Tests of shared-memory
// windows expect every rank to share then; elsewhere (TCP, hybrid, the
// asynchronous wrapper, libfabric) they check what SplitShared reports.
func WholeJobShares() bool {
	if os.Getenv(EnvProcsTransport) != "" {
		return !RankProcess() && os.Getenv(inprocTransport) == ""
	}
	switch os.Getenv(inprocTransport) {
	case "", "local", "shm":
		return true
	}
	return RankProcess()
}
