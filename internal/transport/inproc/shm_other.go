//go:build !linux

package inproc

import (
	"errors"

	"github.com/narma-rma/narma/internal/transport"
)

// newShm fails: the shared-memory transport needs Linux.
func newShm(n int) ([]transport.Endpoint, error) {
	return nil, errors.New("inproc: the shm transport needs Linux")
}

// newHybrid fails: the hybrid transport uses shared memory, which needs
// Linux.
func newHybrid(n int) ([]transport.Endpoint, error) {
	return nil, errors.New("inproc: the hybrid transport needs Linux")
}
