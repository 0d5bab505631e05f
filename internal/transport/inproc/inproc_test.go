package inproc

import (
	"strings"
	"testing"
)

func TestSelection(t *testing.T) {
	for _, tc := range []struct{ env, name string }{{"", "local"}, {"local", "local"}, {"async", "async(local)"}} {
		t.Setenv(EnvVar, tc.env)
		eps, err := New(2)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvVar, tc.env, err)
		}
		if got := eps[0].Caps().Name; got != tc.name {
			t.Errorf("%s=%q: transport %q, want %q", EnvVar, tc.env, got, tc.name)
		}
		for _, ep := range eps {
			ep.Close()
		}
	}
	t.Setenv(EnvVar, "carrier-pigeon")
	if _, err := New(2); err == nil || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Errorf("unknown transport: %v", err)
	}
}
