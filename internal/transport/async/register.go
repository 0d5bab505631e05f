package async

import (
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/registry"
)

// Importing the package registers "async", the local transport wrapped,
// for in-process jobs (NARMA_TRANSPORT=async): only tests import it, so
// programs do not link it.
func init() {
	registry.Register(registry.Transport{
		Name:    "async",
		Summary: "test wrapper of local: operations complete later on workers, control messages overtake data, no direct memory",
		Group: func(n int) ([]transport.Endpoint, error) {
			eps, err := local.New(n)
			if err != nil {
				return nil, err
			}
			return Wrap(eps), nil
		},
	})
}
