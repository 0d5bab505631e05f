package bootstrap

import (
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables of a job started by a launcher.
const (
	EnvRank      = "NARMA_RANK"      // this process's rank, 0..size-1
	EnvSize      = "NARMA_SIZE"      // number of ranks
	EnvAddr      = "NARMA_BOOTSTRAP" // bootstrap address, "unix:" + socket path
	EnvJob       = "NARMA_JOB"       // job identifier (names the shared-memory segments)
	EnvTransport = "NARMA_TRANSPORT" // transport between processes: "shm" or "tcp"

	// The job secret, hex-encoded: the launcher makes a fresh random one
	// for every job and gives it to every rank, and the tcp transport
	// refuses connections from peers that cannot prove they hold it.
	// Optional (the shm transport has no use for it). Like the rest of
	// the environment, it is readable by the user's own processes (and
	// root) only; narmarun never prints it.
	EnvSecret = "NARMA_SECRET"
	// The address the tcp transport listens on, "host:port" (port 0: any
	// free port). Optional; empty means 127.0.0.1:0, enough for a job on
	// one host.
	EnvTCPListen = "NARMA_TCP_LISTEN"
	// How long a peer of the tcp transport may stay silent before it is
	// declared failed, a Go duration ("10s"). Optional; empty or 0 means
	// the transport's default.
	EnvTCPTimeout = "NARMA_TCP_TIMEOUT"
)

// Vars returns the names of all the variables above: those a launcher
// sets, and should not let a rank inherit from its own environment.
func Vars() []string {
	return []string{EnvRank, EnvSize, EnvAddr, EnvJob, EnvTransport, EnvSecret, EnvTCPListen, EnvTCPTimeout}
}

// unixScheme starts every bootstrap address.
const unixScheme = "unix:"

// Env is a rank's view of its job, read from the environment. The zero
// value describes no job. Its String method leaves the secret out, so
// that an Env can be printed.
type Env struct {
	Rank, Size           int
	Addr, Job, Transport string
	// Secret is the job secret, hex-encoded as in NARMA_SECRET; empty if
	// the job has none. [Env.SecretBytes] decodes it.
	Secret string
	// Listen is the address the tcp transport listens on (NARMA_TCP_LISTEN);
	// empty means the transport's default.
	Listen string
	// PeerTimeout is the tcp transport's peer timeout (NARMA_TCP_TIMEOUT);
	// 0 means the transport's default.
	PeerTimeout time.Duration
}

// FromEnv reads the job environment. ok is false (and err nil) when
// NARMA_BOOTSTRAP is unset: no launcher started this process, which is a
// job of its own (a singleton). When it is set, a missing variable, a rank
// or size that is not a number, a size below 1 or a rank outside
// [0, size) is an error, and so are a NARMA_SECRET that is not
// hexadecimal and a NARMA_TCP_TIMEOUT that is not a duration of at least
// 0. NARMA_SECRET, NARMA_TCP_LISTEN and NARMA_TCP_TIMEOUT are optional
// here: a transport that needs them says so.
func FromEnv() (e Env, ok bool, err error) {
	return fromLookup(os.LookupEnv)
}

// fromLookup is FromEnv over an arbitrary environment.
func fromLookup(lookup func(string) (string, bool)) (Env, bool, error) {
	addr, set := lookup(EnvAddr)
	if !set {
		return Env{}, false, nil
	}
	get := func(key string) (string, error) {
		v, ok := lookup(key)
		if !ok || v == "" {
			return "", fmt.Errorf("bootstrap: %s is set but %s is missing", EnvAddr, key)
		}
		return v, nil
	}
	var e Env
	var err error
	if e.Rank, err = intVar(get, EnvRank); err != nil {
		return Env{}, false, err
	}
	if e.Size, err = intVar(get, EnvSize); err != nil {
		return Env{}, false, err
	}
	if e.Job, err = get(EnvJob); err != nil {
		return Env{}, false, err
	}
	if e.Transport, err = get(EnvTransport); err != nil {
		return Env{}, false, err
	}
	e.Addr = addr
	e.Secret, _ = lookup(EnvSecret)
	e.Listen, _ = lookup(EnvTCPListen)
	if s, _ := lookup(EnvTCPTimeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return Env{}, false, fmt.Errorf("bootstrap: %s=%q is not a duration of at least 0 (such as \"30s\")", EnvTCPTimeout, s)
		}
		e.PeerTimeout = d
	}
	if err := e.check(); err != nil {
		return Env{}, false, err
	}
	return e, true, nil
}

// intVar reads the integer variable key.
func intVar(get func(string) (string, error), key string) (int, error) {
	s, err := get(key)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bootstrap: %s=%q is not an integer", key, s)
	}
	return v, nil
}

// check validates the values of e against each other.
func (e Env) check() error {
	if e.Size < 1 || e.Size > maxSize {
		return fmt.Errorf("bootstrap: %s=%d is not in [1, %d]", EnvSize, e.Size, maxSize)
	}
	if e.Rank < 0 || e.Rank >= e.Size {
		return fmt.Errorf("bootstrap: %s=%d is not in [0, %s=%d)", EnvRank, e.Rank, EnvSize, e.Size)
	}
	if _, err := socketPath(e.Addr); err != nil {
		return err
	}
	if _, err := hex.DecodeString(e.Secret); err != nil {
		// The message must not quote the secret.
		return fmt.Errorf("bootstrap: %s is not hexadecimal", EnvSecret)
	}
	if e.PeerTimeout < 0 {
		return fmt.Errorf("bootstrap: %s=%v is negative", EnvTCPTimeout, e.PeerTimeout)
	}
	return nil
}

// SecretBytes returns the job secret, decoded; it fails when there is
// none or when it is shorter than minLen bytes. Its errors never show
// the secret.
func (e Env) SecretBytes(minLen int) ([]byte, error) {
	if e.Secret == "" {
		return nil, fmt.Errorf("bootstrap: %s is missing: the launcher gives every rank of a job the job secret", EnvSecret)
	}
	b, err := hex.DecodeString(e.Secret)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %s is not hexadecimal", EnvSecret)
	}
	if len(b) < minLen {
		return nil, fmt.Errorf("bootstrap: %s holds a secret of %d bytes, fewer than the %d required", EnvSecret, len(b), minLen)
	}
	return b, nil
}

// EncodeSecret returns secret as NARMA_SECRET holds it (hexadecimal), for
// [Env.Secret].
func EncodeSecret(secret []byte) string { return hex.EncodeToString(secret) }

// String describes e for messages, with the secret left out (only
// whether there is one is shown).
func (e Env) String() string {
	secret := "none"
	if e.Secret != "" {
		secret = "set"
	}
	return fmt.Sprintf("{Rank:%d Size:%d Addr:%s Job:%s Transport:%s Secret:%s Listen:%s PeerTimeout:%v}",
		e.Rank, e.Size, e.Addr, e.Job, e.Transport, secret, e.Listen, e.PeerTimeout)
}

// GoString is String: %#v must not show the secret either.
func (e Env) GoString() string { return "bootstrap.Env" + e.String() }

// Environ returns the variables of e as "KEY=value" strings, to append to
// a child's environment. The optional ones (secret, listen address, peer
// timeout) are included only when set.
func (e Env) Environ() []string {
	env := []string{
		EnvRank + "=" + strconv.Itoa(e.Rank),
		EnvSize + "=" + strconv.Itoa(e.Size),
		EnvAddr + "=" + e.Addr,
		EnvJob + "=" + e.Job,
		EnvTransport + "=" + e.Transport,
	}
	if e.Secret != "" {
		env = append(env, EnvSecret+"="+e.Secret)
	}
	if e.Listen != "" {
		env = append(env, EnvTCPListen+"="+e.Listen)
	}
	if e.PeerTimeout != 0 {
		env = append(env, EnvTCPTimeout+"="+e.PeerTimeout.String())
	}
	return env
}

// socketPath returns the socket path of bootstrap address addr.
func socketPath(addr string) (string, error) {
	path, ok := strings.CutPrefix(addr, unixScheme)
	if !ok || path == "" {
		return "", fmt.Errorf("bootstrap: address %q is not %q followed by a socket path", addr, unixScheme)
	}
	return path, nil
}
