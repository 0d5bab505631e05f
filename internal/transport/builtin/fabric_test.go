//go:build fabric

package builtin

import (
	"strings"
	"testing"
	"time"
)

// TestFabricTimeout checks that NARMA_FABRIC_TIMEOUT reaches the fabric
// transport's Config, and that a value that is not a positive duration
// is refused with an error that names the variable.
func TestFabricTimeout(t *testing.T) {
	t.Setenv("NARMA_FABRIC_TIMEOUT", "")
	cfg, err := fabricConfig()
	if err != nil || cfg.Timeout != 0 {
		t.Fatalf("unset: %+v, %v; want the transport's default (0) and no error", cfg.Timeout, err)
	}
	t.Setenv("NARMA_FABRIC_TIMEOUT", "2500ms")
	if cfg, err = fabricConfig(); err != nil || cfg.Timeout != 2500*time.Millisecond {
		t.Fatalf("2500ms: %v, %v", cfg.Timeout, err)
	}
	for _, bad := range []string{"30", "-1s", "0s", "1ns", "soon"} {
		t.Setenv("NARMA_FABRIC_TIMEOUT", bad)
		if _, err := fabricConfig(); err == nil || !strings.Contains(err.Error(), "NARMA_FABRIC_TIMEOUT") {
			t.Errorf("%q: error %v, want one naming NARMA_FABRIC_TIMEOUT", bad, err)
		}
		if _, err := fabricGroup(2); err == nil {
			t.Errorf("%q: a group opened", bad)
		}
	}
}
