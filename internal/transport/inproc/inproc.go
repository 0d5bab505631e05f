// Package inproc chooses the transport of jobs whose ranks are goroutines
// of one process (narma.Run). The environment variable NARMA_TRANSPORT
// names it (package registry); the built-in ones are:
//
//   - "local" or unset: the in-process load/store transport, operations
//     complete when they return;
//   - "shm": the shared-memory transport of process jobs, its ranks in
//     this one process (Linux only): rings, doorbells and mapped segments
//     as between processes, for testing and measuring it. The library's
//     memory comes from shared segments from then on, in the whole process;
//   - "tcp": the TCP transport of multi-host jobs, its ranks in this one
//     process, connected over loopback;
//   - "hybrid": the transport of multi-host jobs with several ranks per
//     host (Linux only): ranks alternate between two pretend hosts, shared
//     memory within a host, TCP between hosts.
//
// Tests that import package async may also name "async": the local
// transport wrapped so that operations complete later on worker
// goroutines, control messages overtake data and memory is not reached
// directly, the paths a network transport takes. Programs do not link it.
package inproc

import (
	"fmt"
	"os"

	"github.com/narma-rma/narma/internal/transport"
	_ "github.com/narma-rma/narma/internal/transport/builtin" // the built-in transports
	"github.com/narma-rma/narma/internal/transport/registry"
)

// EnvVar is the environment variable that selects the transport.
const EnvVar = "NARMA_TRANSPORT"

// New returns n connected endpoints of the transport NARMA_TRANSPORT
// names ("local" if it is unset or empty).
func New(n int) ([]transport.Endpoint, error) {
	name := os.Getenv(EnvVar)
	if name == "" {
		name = "local"
	}
	eps, err := registry.Group(name, n)
	if err != nil {
		return nil, fmt.Errorf("inproc: %s=%q: %w", EnvVar, name, err)
	}
	return eps, nil
}
