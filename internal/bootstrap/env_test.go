package bootstrap

import (
	"strings"
	"testing"
)

// lookupIn returns a lookup function over the "KEY=value" strings env.
func lookupIn(env []string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == key {
				return v, true
			}
		}
		return "", false
	}
}

func TestEnvironRoundTrip(t *testing.T) {
	want := Env{Rank: 2, Size: 5, Addr: "unix:/x/boot.sock", Job: "12-00ff", Transport: "shm"}
	got, ok, err := fromLookup(lookupIn(want.Environ()))
	if err != nil || !ok {
		t.Fatalf("fromLookup(Environ()) = %v, %v, %v", got, ok, err)
	}
	if got != want {
		t.Fatalf("fromLookup(Environ()) = %+v, want %+v", got, want)
	}
}

func TestFromEnvUnset(t *testing.T) {
	t.Setenv(EnvAddr, "")
	// t.Setenv cannot unset; check the lookup path that does.
	e, ok, err := fromLookup(lookupIn([]string{EnvRank + "=1", EnvSize + "=4"}))
	if ok || err != nil || e != (Env{}) {
		t.Fatalf("without %s: %+v, %v, %v; want no job and no error", EnvAddr, e, ok, err)
	}
	// Set but empty is malformed, and FromEnv reads the real environment.
	if _, ok, err := FromEnv(); ok || err == nil {
		t.Fatalf("FromEnv with %s empty: ok %v, err %v; want an error", EnvAddr, ok, err)
	}
}

func TestFromEnvReal(t *testing.T) {
	for _, kv := range (Env{Rank: 0, Size: 1, Addr: "unix:/s", Job: "1-ab", Transport: "shm"}).Environ() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	e, ok, err := FromEnv()
	if err != nil || !ok || e.Size != 1 || e.Addr != "unix:/s" || e.Job != "1-ab" || e.Transport != "shm" {
		t.Fatalf("FromEnv() = %+v, %v, %v", e, ok, err)
	}
}

func TestFromEnvInvalid(t *testing.T) {
	good := map[string]string{
		EnvRank: "1", EnvSize: "4", EnvAddr: "unix:/tmp/s", EnvJob: "1-ab", EnvTransport: "shm",
	}
	tests := []struct {
		name, key, value string // value "-" removes key
		wantInMsg        string
	}{
		{"rank missing", EnvRank, "-", EnvRank},
		{"size missing", EnvSize, "-", EnvSize},
		{"job missing", EnvJob, "-", EnvJob},
		{"transport missing", EnvTransport, "-", EnvTransport},
		{"job empty", EnvJob, "", EnvJob},
		{"rank not a number", EnvRank, "one", "not an integer"},
		{"size not a number", EnvSize, "4x", "not an integer"},
		{"rank negative", EnvRank, "-1", EnvRank},
		{"rank too large", EnvRank, "4", EnvRank},
		{"size zero", EnvSize, "0", EnvSize},
		{"size huge", EnvSize, "100000000", EnvSize},
		{"address without scheme", EnvAddr, "/tmp/s", "address"},
		{"address without path", EnvAddr, "unix:", "address"},
		{"address empty", EnvAddr, "", "address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var env []string
			for k, v := range good {
				if k == tt.key {
					if tt.value == "-" {
						continue
					}
					v = tt.value
				}
				env = append(env, k+"="+v)
			}
			e, ok, err := fromLookup(lookupIn(env))
			if err == nil || ok {
				t.Fatalf("got %+v, %v, nil error; want an error", e, ok)
			}
			if !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Fatalf("error %q does not mention %q", err, tt.wantInMsg)
			}
		})
	}
}
