// Package launchenv recognizes a process that another launcher started as
// one rank of a parallel job — Slurm's srun, Open MPI's mpirun, MPICH's
// (or Intel MPI's) mpiexec — from the variables that launcher puts in its
// environment, so that narma.Init can join such a job without narmarun.
//
// It only reads: rank, job size, an identifier of the job when the
// launcher gives one, and the node of the rank when the launcher says
// which. How the ranks then meet is package join's business.
package launchenv

import (
	"fmt"
	"os"
	"strconv"
)

// Job is what a launcher's environment says about this process.
type Job struct {
	// Launcher names the launcher: "slurm", "openmpi" or "mpich".
	Launcher string
	// Rank and Size place the process in the job.
	Rank, Size int
	// ID identifies the job (and step) among the launcher's jobs, or is
	// empty if the launcher does not say.
	ID string
	// Node is the index of the rank's node in the job, or -1 if the
	// launcher does not say; LocalRank is the rank's place among the
	// ranks of its node, or -1.
	Node, LocalRank int
}

// Detect reads the environment of this process. ok is false (and err
// nil) when no known launcher started it.
func Detect() (j Job, ok bool, err error) { return detect(os.LookupEnv) }

// launchers are tried in order: the first whose rank variable is set
// decides. A Slurm step is recognized by SLURM_STEP_NUM_TASKS, which
// srun sets and a batch script's own shell does not, so that a program
// run directly in a batch script stays a job of its own.
var launchers = []struct {
	name, rank, size, id, node, local string
}{
	{"slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_JOB_ID", "SLURM_NODEID", "SLURM_LOCALID"},
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_NAMESPACE", "", "OMPI_COMM_WORLD_LOCAL_RANK"},
	{"mpich", "PMI_RANK", "PMI_SIZE", "PMI_KVSNAME", "", "MPI_LOCALRANKID"},
}

func detect(lookup func(string) (string, bool)) (Job, bool, error) {
	for _, l := range launchers {
		rs, ok := lookup(l.rank)
		if !ok {
			continue
		}
		ss, ok := lookup(l.size)
		if !ok {
			if l.name == "slurm" {
				continue // a batch script, not a step
			}
			return Job{}, false, fmt.Errorf("launchenv: %s is set but %s is not", l.rank, l.size)
		}
		j := Job{Launcher: l.name, Node: -1, LocalRank: -1}
		var err error
		if j.Rank, err = number(l.rank, rs); err != nil {
			return Job{}, false, err
		}
		if j.Size, err = number(l.size, ss); err != nil {
			return Job{}, false, err
		}
		if j.Size < 1 || j.Rank >= j.Size {
			return Job{}, false, fmt.Errorf("launchenv: %s=%d of %s=%d", l.rank, j.Rank, l.size, j.Size)
		}
		if id, ok := lookup(l.id); ok && id != "" {
			j.ID = id
			if l.name == "slurm" {
				if step, ok := lookup("SLURM_STEP_ID"); ok && step != "" {
					j.ID += "." + step
				}
			}
		}
		if l.name == "openmpi" && j.ID == "" {
			if id, ok := lookup("OMPI_MCA_ess_base_jobid"); ok {
				j.ID = id
			}
		}
		for _, f := range []struct {
			name string
			dst  *int
		}{{l.node, &j.Node}, {l.local, &j.LocalRank}} {
			if f.name == "" {
				continue
			}
			if s, ok := lookup(f.name); ok {
				if *f.dst, err = number(f.name, s); err != nil {
					return Job{}, false, err
				}
			}
		}
		return j, true, nil
	}
	return Job{}, false, nil
}

// number parses the non-negative integer value s of variable name.
func number(name, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("launchenv: %s=%q is not a rank or count", name, s)
	}
	return n, nil
}
