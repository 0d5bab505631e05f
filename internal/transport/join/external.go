package join

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/launchenv"
)

// Rendezvous of jobs that another launcher started (srun, mpirun,
// mpiexec), which give each process its rank and the job's size but no
// way to meet: the user names, in the job's environment, the address at
// which rank 0 serves the bootstrap, and the job secret.
const (
	// EnvRendezvous is "host:port" on rank 0's host: rank 0 listens
	// there (the host must be an address of its machine, not a wildcard),
	// the others dial it.
	EnvRendezvous = "NARMA_RENDEZVOUS"
)

// finishTimeout bounds how long rank 0, at the end of a job it serves the
// bootstrap of, waits for the other ranks to leave.
const finishTimeout = 30 * time.Second

// external joins the job lj that another launcher started, over the TCP
// transport: rank 0 serves the bootstrap at NARMA_RENDEZVOUS, every rank
// (rank 0 too) joins it as under narmarun, with the secret of
// NARMA_SECRET, listening on the interface that reaches rank 0.
func external(ctx context.Context, lj launchenv.Job, lookup func(string) (string, bool)) (*Job, error) {
	where := fmt.Sprintf("join: rank %d of %d started by %s", lj.Rank, lj.Size, lj.Launcher)
	addr, ok := lookup(EnvRendezvous)
	if !ok || addr == "" {
		return nil, fmt.Errorf("%s: %s is not set: export %s=<host of rank 0>:<port> and %s=<random hex, 32 bytes or more> in the job's environment (see narma.Init)",
			where, EnvRendezvous, EnvRendezvous, bootstrap.EnvSecret)
	}
	secretHex, _ := lookup(bootstrap.EnvSecret)
	env := bootstrap.Env{
		Rank: lj.Rank, Size: lj.Size, Addr: "tcp:" + addr, Job: lj.ID, Transport: "tcp",
		Secret: secretHex, Listen: bootstrap.ListenAuto,
	}
	env.Job = externalJobID(lj)
	if s, ok := lookup(bootstrap.EnvTCPTimeout); ok && s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%s: %s=%q is not a duration", where, bootstrap.EnvTCPTimeout, s)
		}
		env.PeerTimeout = d
	}
	if s, ok := lookup(bootstrap.EnvTCPSpin); ok && s != "" {
		d, err := bootstrap.ParseSpin(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		env.Spin = d
	}
	secret, err := env.SecretBytes(bootstrap.MinSecret)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var srv *bootstrap.Server
	served := make(chan error, 1)
	if lj.Rank == 0 {
		if srv, err = bootstrap.ListenTCP(addr, lj.Size, secret); err != nil {
			return nil, fmt.Errorf("%s: serving the bootstrap at %s=%s (rank 0 must run on that host): %w", where, EnvRendezvous, addr, err)
		}
		go func() { served <- srv.Serve(context.Background()) }()
	}
	env.Transport = "tcp"
	j, err := launched(ctx, env)
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		return nil, err
	}
	if srv != nil {
		// Rank 0 must outlive the job's bootstrap: the other ranks exit
		// when their connection to it ends.
		j.Finish = func() error {
			j.boot.Close()
			t := time.NewTimer(finishTimeout)
			defer t.Stop()
			select {
			case err := <-served:
				srv.Close()
				if err != nil && !errors.Is(err, context.Canceled) {
					return fmt.Errorf("join: the job's bootstrap: %w", err)
				}
				return nil
			case <-t.C:
				srv.Close()
				return fmt.Errorf("join: rank 0 waited %v for the other ranks to leave the job", finishTimeout)
			}
		}
	}
	return j, nil
}

// lookupEnv is os.LookupEnv; tests replace it.
var lookupEnv = os.LookupEnv

// externalJobID turns the launcher's job identifier into one that
// package shm accepts ("<digits>-<hex>"), the same at every rank.
func externalJobID(lj launchenv.Job) string {
	sum := sha256.Sum256([]byte(lj.Launcher + ":" + lj.ID))
	return "0-" + hex.EncodeToString(sum[:8])
}
