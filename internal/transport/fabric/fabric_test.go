//go:build fabric

package fabric_test

import (
	"os"
	"strings"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/fabric"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// testConfig is the provider the tests run on: FI_PROVIDER's, else
// tcp;ofi_rxm, on loopback.
func testConfig() fabric.Config {
	cfg := fabric.Config{Provider: os.Getenv("FI_PROVIDER"), Node: "127.0.0.1"}
	if cfg.Provider == "" {
		cfg.Provider = "tcp;ofi_rxm"
	}
	if cfg.Provider == "shm" {
		cfg.Node = ""
	}
	return cfg
}

func group(t testing.TB, n int) []*fabric.Endpoint {
	t.Helper()
	eps, err := fabric.Group(testConfig(), n)
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
		eps := group(t, n)
		out := make([]transport.Endpoint, n)
		for i, e := range eps {
			out[i] = e
		}
		return out
	})
}

func TestDescribe(t *testing.T) {
	s, err := fabric.Describe(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, testConfig().Provider) {
		t.Errorf("Describe = %q, does not name the provider %q", s, testConfig().Provider)
	}
	t.Log(s)
	if _, err := fabric.Describe(fabric.Config{Provider: "no-such-provider"}); err == nil {
		t.Error("Describe of an unknown provider: no error")
	}
}
