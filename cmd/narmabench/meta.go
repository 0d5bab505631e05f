package main

import (
	"os"

	"github.com/narma-rma/narma/internal/bench"
	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport/join"
)

// jobMeta returns the metadata of a run with the options o that starts
// now: the build's and the machine's (bench.NewMeta), and the job's: the
// launcher's name, transport and number of ranks under a launcher
// (narmarun, srun, mpirun, mpiexec), else the in-process transport that
// NARMA_TRANSPORT selects ("local" if unset) and -n.
func jobMeta(o options) (bench.Meta, error) {
	m := bench.NewMeta()
	m.Strategy = o.cfg.Strategy.String()
	env, launched, err := join.Describe()
	if err != nil {
		return m, err
	}
	if launched {
		m.Transport, m.Launcher, m.JobRanks = env.Transport, env.Launcher, env.Size
		return m, nil
	}
	m.Transport, m.Launcher, m.JobRanks = os.Getenv(bootstrap.EnvTransport), "none", o.ranks
	if m.Transport == "" {
		m.Transport = "local"
	}
	return m, nil
}
