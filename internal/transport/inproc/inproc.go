// Package inproc chooses the transport of jobs whose ranks are goroutines
// of one process (narma.Run). The environment variable NARMA_TRANSPORT
// selects it:
//
//   - "local" or unset: the in-process load/store transport, operations
//     complete when they return;
//   - "async": the same wrapped by transport/async, so that operations
//     complete later on worker goroutines, control messages overtake data
//     and memory is not reached directly — the paths a network transport
//     takes, for testing programs and libraries against them;
//   - "shm": the shared-memory transport of process jobs, its ranks in
//     this one process (Linux only): rings, doorbells and mapped segments
//     as between processes, for testing and measuring it. The library's
//     memory comes from shared segments from then on, in the whole process;
//   - "tcp": the TCP transport of multi-host jobs, its ranks in this one
//     process, connected over loopback;
//   - "hybrid": the transport of multi-host jobs with several ranks per
//     host (Linux only): ranks alternate between two pretend hosts, shared
//     memory within a host, TCP between hosts.
package inproc

import (
	"context"
	"fmt"
	"os"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/async"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// EnvVar is the environment variable that selects the transport.
const EnvVar = "NARMA_TRANSPORT"

// New returns n connected endpoints of the transport NARMA_TRANSPORT
// names.
func New(n int) ([]transport.Endpoint, error) {
	switch name := os.Getenv(EnvVar); name {
	case "", "local":
		return local.New(n)
	case "async":
		eps, err := local.New(n)
		if err != nil {
			return nil, err
		}
		return async.Wrap(eps), nil
	case "shm":
		return newShm(n)
	case "hybrid":
		return newHybrid(n)
	case "tcp":
		eps, err := tcp.Group(context.Background(), tcp.Config{Size: n})
		if err != nil {
			return nil, err
		}
		out := make([]transport.Endpoint, n)
		for i, e := range eps {
			out[i] = e
		}
		return out, nil
	default:
		return nil, fmt.Errorf("inproc: %s=%q: unknown in-process transport (want local, async, shm, tcp or hybrid)", EnvVar, name)
	}
}
