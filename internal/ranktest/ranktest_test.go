package ranktest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/testjob"
)

func TestMain(m *testing.M) { Main(m) }

// TestNextCall: jobs are numbered per test from 1, a subtest's apart from
// its parent's.
func TestNextCall(t *testing.T) {
	if RankProcess() {
		t.Skip("starts no job")
	}
	for k := 1; k <= 2; k++ {
		if got, want := nextCall(t), fmt.Sprintf("TestNextCall#%d", k); got != want {
			t.Errorf("call %d: %q, want %q", k, got, want)
		}
	}
	t.Run("sub", func(t *testing.T) {
		if got, want := nextCall(t), "TestNextCall/sub#1"; got != want {
			t.Errorf("subtest: %q, want %q", got, want)
		}
	})
}

// TestRunFindsItsJob: every job of a test, in the test and in a subtest,
// runs on ranks of the right number (the jobs differ in size, so a rank
// process that joined another job than its own would fail), and no rank
// process runs a job after its own: it ends there.
func TestRunFindsItsJob(t *testing.T) {
	order := []string{"TestRunFindsItsJob#1", "TestRunFindsItsJob#2", "TestRunFindsItsJob/sub#1", "TestRunFindsItsJob/sub#2"}
	job := func(t *testing.T, k, n int) {
		t.Helper()
		name := fmt.Sprintf("%s#%d", t.Name(), k)
		Run(t, n, func(c *narma.Comm) error {
			if c.Size() != n {
				return fmt.Errorf("job %s: %d ranks, want %d", name, c.Size(), n)
			}
			if RankProcess() && slices.Index(order, name) > slices.Index(order, testjob.Call()) {
				return fmt.Errorf("job %s runs in the rank process of %s", name, testjob.Call())
			}
			return c.Barrier(c.Context())
		})
	}
	job(t, 1, 2)
	job(t, 2, 3)
	t.Run("sub", func(t *testing.T) {
		job(t, 1, 1)
		job(t, 2, 2)
	})
}
