package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
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
	for _, want := range []Env{
		{Rank: 2, Size: 5, Addr: "unix:/x/boot.sock", Job: "12-00ff", Transport: "shm"},
		{Rank: 0, Size: 3, Addr: "unix:/x/boot.sock", Job: "12-00ff", Transport: "tcp",
			Secret: EncodeSecret([]byte("0123456789abcdef0123456789abcdef")), Listen: "127.0.0.1:0", PeerTimeout: 90 * time.Second},
		{Rank: 1, Size: 3, Addr: "unix:/x/boot.sock", Job: "12-00ff", Transport: "tcp",
			Secret: "00ff", PeerTimeout: 1500 * time.Millisecond, Spin: 20 * time.Microsecond},
		{Rank: 1, Size: 3, Addr: "unix:/x/boot.sock", Job: "12-00ff", Transport: "hybrid", Spin: -1},
		{Rank: 3, Size: 4, Addr: "tcp:10.1.2.3:4567", Job: "12-00ff", Transport: "tcp",
			Secret: "00ff", Listen: ListenAuto, Host: 1},
		{Rank: 0, Size: 2, Addr: "tcp:[fe80::1%eth0]:4567", Job: "12-00ff", Transport: "tcp", Host: 1},
	} {
		env := want.Environ()
		got, ok, err := fromLookup(lookupIn(env))
		if err != nil || !ok {
			t.Fatalf("fromLookup(Environ()) = %v, %v, %v", got, ok, err)
		}
		if got != want {
			t.Fatalf("fromLookup(Environ()) = %v, want %v", got, want)
		}
		// The optional variables are written only when set.
		for key, set := range map[string]bool{EnvSecret: want.Secret != "", EnvTCPListen: want.Listen != "", EnvTCPTimeout: want.PeerTimeout != 0, EnvTCPSpin: want.Spin != 0} {
			has := slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
			if has != set {
				t.Errorf("Environ() of %v has %s: %v, want %v", want, key, has, set)
			}
		}
		if got.Secret != "" {
			b, err := got.SecretBytes(2)
			if err != nil || EncodeSecret(b) != want.Secret {
				t.Errorf("SecretBytes() = %x, %v; want the secret", b, err)
			}
		}
	}
}

// TestVarsCoverEnviron: every variable Environ writes is one of Vars, so
// a launcher that drops those from what its ranks inherit drops them all.
func TestVarsCoverEnviron(t *testing.T) {
	e := Env{Rank: 0, Size: 1, Addr: "unix:/s", Job: "1-ab", Transport: "tcp", Secret: "00", Listen: "h:0", PeerTimeout: time.Second, Spin: time.Microsecond, Host: 0}
	for _, kv := range e.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(Vars(), k) {
			t.Errorf("Environ() writes %s, which Vars() lacks", k)
		}
	}
	if len(e.Environ()) != len(Vars()) {
		t.Errorf("Environ() of a full Env writes %d variables, Vars() has %d", len(e.Environ()), len(Vars()))
	}
}

func TestSecretBytes(t *testing.T) {
	secret := EncodeSecret([]byte("0123456789abcdef"))
	for _, tt := range []struct {
		name, secret string
		wantErr      string
	}{
		{"ok", secret, ""},
		{"missing", "", EnvSecret + " is missing"},
		{"short", secret[:30], "15 bytes, fewer than the 16 required"},
		{"not hex", "zz" + secret, "not hexadecimal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := (Env{Secret: tt.secret}).SecretBytes(16)
			if tt.wantErr == "" {
				if err != nil || string(b) != "0123456789abcdef" {
					t.Fatalf("SecretBytes() = %q, %v", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SecretBytes() = %q, %v; want an error with %q", b, err, tt.wantErr)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Fatalf("error %q shows the secret", err)
			}
		})
	}
}

// TestEnvPrintsNoSecret: an Env printed in any of the usual ways does not
// show its secret.
func TestEnvPrintsNoSecret(t *testing.T) {
	const secret = "5ec4e75ec4e75ec4e75ec4e75ec4e75e"
	e := Env{Rank: 1, Size: 2, Addr: "unix:/s", Job: "1-ab", Transport: "tcp", Secret: secret}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(format, e); strings.Contains(out, secret) || !strings.Contains(out, "Secret:set") {
			t.Errorf("Sprintf(%q, env) = %q", format, out)
		}
	}
	if out := fmt.Sprint(&e); strings.Contains(out, secret) {
		t.Errorf("Sprint(&env) = %q", out)
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
		EnvSecret: "00ff", EnvTCPListen: "127.0.0.1:0", EnvTCPTimeout: "5s", EnvTCPSpin: "50us", EnvHost: "3",
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
		{"tcp address without port", EnvAddr, "tcp:10.0.0.1", "address"},
		{"tcp address without host", EnvAddr, "tcp::5000", "address"},
		{"tcp address empty", EnvAddr, "tcp:", "address"},
		{"host not a number", EnvHost, "h1", EnvHost},
		{"host negative", EnvHost, "-1", EnvHost},
		{"host beyond the ranks", EnvHost, "4", EnvHost},
		{"secret not hex", EnvSecret, "s3cr3t", EnvSecret + " is not hexadecimal"},
		{"secret of odd length", EnvSecret, "0ff", EnvSecret + " is not hexadecimal"},
		{"timeout not a duration", EnvTCPTimeout, "10", EnvTCPTimeout},
		{"timeout negative", EnvTCPTimeout, "-1s", EnvTCPTimeout},
		{"spin not a duration", EnvTCPSpin, "50", EnvTCPSpin},
		{"spin negative", EnvTCPSpin, "-1us", EnvTCPSpin},
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
			if tt.key == EnvSecret && strings.Contains(err.Error(), tt.value) {
				t.Fatalf("error %q shows the secret", err)
			}
		})
	}
}
