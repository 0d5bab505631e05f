package narma_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/testjob"
)

const externalCall = "external-launcher"

// externalLaunchers are the environments of ranks that srun, Open MPI's
// mpirun and MPICH's mpiexec start, for rank r of n.
var externalLaunchers = map[string]func(r, n int) []string{
	"srun": func(r, n int) []string {
		return []string{"SLURM_PROCID=" + strconv.Itoa(r), "SLURM_STEP_NUM_TASKS=" + strconv.Itoa(n),
			"SLURM_NTASKS=" + strconv.Itoa(n), "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURM_NODEID=0", "SLURM_LOCALID=" + strconv.Itoa(r)}
	},
	"openmpi": func(r, n int) []string {
		return []string{"OMPI_COMM_WORLD_RANK=" + strconv.Itoa(r), "OMPI_COMM_WORLD_SIZE=" + strconv.Itoa(n),
			"OMPI_COMM_WORLD_LOCAL_RANK=" + strconv.Itoa(r), "PMIX_NAMESPACE=prterun-test@1"}
	},
	"mpich": func(r, n int) []string {
		return []string{"PMI_RANK=" + strconv.Itoa(r), "PMI_SIZE=" + strconv.Itoa(n)}
	},
}

// TestExternalLaunchers: ranks started as srun, Open MPI's mpirun and
// MPICH's mpiexec start them (their environment variables, no narmarun)
// join one job through NARMA_RENDEZVOUS and NARMA_SECRET, communicate,
// and all exit with status 0; without NARMA_RENDEZVOUS, Init fails with a
// message that says what to set.
func TestExternalLaunchers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const n = 3
	for name, vars := range externalLaunchers {
		t.Run(name, func(t *testing.T) {
			outs, errs := startExternal(t, n, vars, true)
			for r := range n {
				if errs[r] != nil {
					t.Errorf("rank %d: %v\n%s", r, errs[r], outs[r])
				} else if !strings.Contains(outs[r], fmt.Sprintf("rank %d of %d: ok", r, n)) {
					t.Errorf("rank %d did not report success:\n%s", r, outs[r])
				}
			}
		})
	}
	t.Run("no rendezvous", func(t *testing.T) {
		outs, errs := startExternal(t, 2, externalLaunchers["srun"], false)
		for r := range 2 {
			if errs[r] == nil || !strings.Contains(outs[r], "NARMA_RENDEZVOUS is not set") {
				t.Errorf("rank %d: exit %v, output:\n%s\nwant a failure naming NARMA_RENDEZVOUS", r, errs[r], outs[r])
			}
		}
	})
}

// startExternal runs n ranks of externalRank with the launcher
// environment vars (and the rendezvous, if rendezvous) and returns their
// output and exit errors.
func startExternal(t *testing.T, n int, vars func(r, n int) []string, rendezvous bool) ([]string, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i*7 + 1)
	}
	var base []string
	for _, kv := range os.Environ() { // a clean job environment
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "NARMA_") && !strings.HasPrefix(k, "SLURM_") &&
			!strings.HasPrefix(k, "OMPI_") && !strings.HasPrefix(k, "PMI") {
			base = append(base, kv)
		}
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	outs := make([]bytes.Buffer, n)
	cmds := make([]*exec.Cmd, n)
	for r := range n {
		cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
		cmd.Env = append(append([]string(nil), base...), vars(r, n)...)
		cmd.Env = append(cmd.Env, testjob.EnvCall+"="+externalCall, bootstrap.EnvSecret+"="+hex.EncodeToString(secret), "NARMA_TCP_TIMEOUT=20s")
		if rendezvous {
			cmd.Env = append(cmd.Env, "NARMA_RENDEZVOUS="+addr)
		}
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	errs := make([]error, n)
	res := make([]string, n)
	for r, cmd := range cmds {
		errs[r] = cmd.Wait()
	}
	for r := range outs {
		res[r] = outs[r].String()
	}
	return res, errs
}

// externalRank is one rank of TestExternalLaunchers: it joins, sends its
// rank to the next rank with a notified put, checks what it got, and
// leaves.
func externalRank() error {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c, err := narma.Init(ctx)
	if err != nil {
		return err
	}
	me, n := c.Rank(), c.Size()
	jctx := c.Context()
	w, err := narma.Allocate[int64](jctx, c, 1)
	if err != nil {
		return err
	}
	r, err := w.NotifyInit(narma.AnySource, 3, 1)
	if err != nil {
		return err
	}
	if err := w.LockAll(jctx, 0); err != nil {
		return err
	}
	if err := r.Start(); err != nil {
		return err
	}
	if err := c.Barrier(jctx); err != nil {
		return err
	}
	if err := w.PutNotify([]int64{int64(me + 100)}, (me+1)%n, 0, narma.Tag(3)); err != nil {
		return err
	}
	if err := w.Flush(jctx, (me+1)%n); err != nil {
		return err
	}
	st, err := r.Wait(jctx)
	if err != nil {
		return err
	}
	prev := (me + n - 1) % n
	if got := w.Local()[0]; st.Source != prev || got != int64(prev+100) {
		return fmt.Errorf("got %d from rank %d, want %d from rank %d", got, st.Source, prev+100, prev)
	}
	if err := w.UnlockAll(jctx); err != nil {
		return err
	}
	if err := w.Free(jctx); err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		return err
	}
	fmt.Printf("rank %d of %d: ok\n", me, n)
	return nil
}
