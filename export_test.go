package narma

import (
	"os"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/async"
	"github.com/narma-rma/narma/internal/transport/local"
)

// NARMA_TEST_TRANSPORT=async runs the package's tests over the async
// wrapper of the in-process transport: operations complete later, on
// other goroutines, control messages overtake data, memory is not reached
// directly, and windows default to the deferred strategy. It exercises the
// paths a network transport takes.
func init() {
	if os.Getenv("NARMA_TEST_TRANSPORT") == "async" {
		newEndpoints = func(n int) ([]transport.Endpoint, error) {
			eps, err := local.New(n)
			if err != nil {
				return nil, err
			}
			return async.Wrap(eps), nil
		}
	}
}
