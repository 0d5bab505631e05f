package bootstrap

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Environment variables of a job started by a launcher.
const (
	EnvRank      = "NARMA_RANK"      // this process's rank, 0..size-1
	EnvSize      = "NARMA_SIZE"      // number of ranks
	EnvAddr      = "NARMA_BOOTSTRAP" // bootstrap address, "unix:" + socket path or "tcp:" + host:port
	EnvJob       = "NARMA_JOB"       // job identifier (names the shared-memory segments)
	EnvTransport = "NARMA_TRANSPORT" // transport between processes: "shm", "tcp" or "hybrid"

	// The job secret, hex-encoded: the launcher makes a fresh random one
	// for every job and gives it to every rank, and the tcp transport
	// refuses connections from peers that cannot prove they hold it.
	// Optional (the shm transport has no use for it). Like the rest of
	// the environment, it is readable by the user's own processes (and
	// root) only; narmarun never prints it.
	EnvSecret = "NARMA_SECRET"
	// The address the tcp transport listens on, "host:port" (port 0: any
	// free port), or "auto". Optional; empty and "auto" ([ListenAuto])
	// mean the local address of the rank's connection to the bootstrap
	// server, port 0: the interface through which this host reaches the
	// launcher's, loopback when the server is a Unix socket.
	EnvTCPListen = "NARMA_TCP_LISTEN"
	// How long a peer of the tcp transport may stay silent before it is
	// declared failed, a Go duration ("10s"). Optional; empty or 0 means
	// the transport's default.
	EnvTCPTimeout = "NARMA_TCP_TIMEOUT"
	// How long a reader of the tcp transport polls its socket before it
	// waits in the runtime's network poller, a Go duration ("50us"); 0
	// turns polling off. Optional; unset means the transport's choice
	// (polling while the ranks of the host each have a core).
	EnvTCPSpin = "NARMA_TCP_SPIN"
	// The index of the rank's host in the launcher's list of hosts, from
	// 0: ranks with the same index run on the same host (and could share
	// memory). Optional; unset means 0, a job on one host.
	EnvHost = "NARMA_HOST"
)

// ListenAuto is the value of NARMA_TCP_LISTEN that asks for the address
// of the interface that reaches the bootstrap server (see EnvTCPListen).
const ListenAuto = "auto"

// Vars returns the names of all the variables above: those a launcher
// sets, and should not let a rank inherit from its own environment.
func Vars() []string {
	return []string{EnvRank, EnvSize, EnvAddr, EnvJob, EnvTransport, EnvSecret, EnvTCPListen, EnvTCPTimeout, EnvTCPSpin, EnvHost}
}

// The schemes of bootstrap addresses.
const (
	unixScheme = "unix:" // followed by a socket path
	tcpScheme  = "tcp:"  // followed by host:port
)

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
	// empty or [ListenAuto] means the interface that reaches the
	// bootstrap server.
	Listen string
	// PeerTimeout is the tcp transport's peer timeout (NARMA_TCP_TIMEOUT);
	// 0 means the transport's default.
	PeerTimeout time.Duration
	// Spin is how long the tcp transport's readers poll (NARMA_TCP_SPIN),
	// as tcp.Config.Spin: 0 means the transport's choice, a negative
	// value no polling (NARMA_TCP_SPIN=0).
	Spin time.Duration
	// Host is the index of the rank's host in the launcher's list
	// (NARMA_HOST); ranks with the same Host share a machine.
	Host int
}

// FromEnv reads the job environment. ok is false (and err nil) when
// NARMA_BOOTSTRAP is unset: no launcher started this process, which is a
// job of its own (a singleton). When it is set, a missing variable, a rank
// or size that is not a number, a size below 1 or a rank outside
// [0, size) is an error, and so are a NARMA_BOOTSTRAP that is neither
// "unix:" and a path nor "tcp:" and host:port, a NARMA_SECRET that is not
// hexadecimal, a NARMA_TCP_TIMEOUT that is not a duration of at least 0
// and a NARMA_HOST outside [0, size). NARMA_SECRET, NARMA_TCP_LISTEN,
// NARMA_TCP_TIMEOUT and NARMA_HOST are optional here: a transport that
// needs them says so.
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
	if s, _ := lookup(EnvTCPSpin); s != "" {
		if e.Spin, err = ParseSpin(s); err != nil {
			return Env{}, false, err
		}
	}
	if s, _ := lookup(EnvHost); s != "" {
		h, err := strconv.Atoi(s)
		if err != nil {
			return Env{}, false, fmt.Errorf("bootstrap: %s=%q is not an integer", EnvHost, s)
		}
		e.Host = h
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
	if _, _, err := parseAddr(e.Addr); err != nil {
		return err
	}
	if _, err := hex.DecodeString(e.Secret); err != nil {
		// The message must not quote the secret.
		return fmt.Errorf("bootstrap: %s is not hexadecimal", EnvSecret)
	}
	if e.PeerTimeout < 0 {
		return fmt.Errorf("bootstrap: %s=%v is negative", EnvTCPTimeout, e.PeerTimeout)
	}
	if e.Host < 0 || e.Host >= e.Size {
		return fmt.Errorf("bootstrap: %s=%d is not in [0, %s=%d)", EnvHost, e.Host, EnvSize, e.Size)
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
	return fmt.Sprintf("{Rank:%d Size:%d Addr:%s Job:%s Transport:%s Secret:%s Listen:%s PeerTimeout:%v Spin:%v Host:%d}",
		e.Rank, e.Size, e.Addr, e.Job, e.Transport, secret, e.Listen, e.PeerTimeout, e.Spin, e.Host)
}

// GoString is String: %#v must not show the secret either.
func (e Env) GoString() string { return "bootstrap.Env" + e.String() }

// Environ returns the variables of e as "KEY=value" strings, to append to
// a child's environment. The optional ones (secret, listen address, peer
// timeout, spin) are included only when set; the host always is.
func (e Env) Environ() []string {
	env := []string{
		EnvRank + "=" + strconv.Itoa(e.Rank),
		EnvSize + "=" + strconv.Itoa(e.Size),
		EnvAddr + "=" + e.Addr,
		EnvJob + "=" + e.Job,
		EnvTransport + "=" + e.Transport,
		EnvHost + "=" + strconv.Itoa(e.Host),
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
	if e.Spin != 0 {
		env = append(env, EnvTCPSpin+"="+FormatSpin(e.Spin))
	}
	return env
}

// ParseSpin reads a value of NARMA_TCP_SPIN: a duration of at least 0,
// 0 meaning no polling (returned as -1, as tcp.Config.Spin has it).
func ParseSpin(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bootstrap: %s=%q is not a duration of at least 0 (such as \"50us\", or 0 for no polling)", EnvTCPSpin, s)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// FormatSpin is the NARMA_TCP_SPIN value of spin d (not 0): ParseSpin's
// inverse.
func FormatSpin(d time.Duration) string {
	if d < 0 {
		return "0"
	}
	return d.String()
}

// parseAddr splits bootstrap address addr into the network and address
// to dial: "unix" and a socket path, or "tcp" and host:port.
func parseAddr(addr string) (network, address string, err error) {
	if path, ok := strings.CutPrefix(addr, unixScheme); ok && path != "" {
		return "unix", path, nil
	}
	if hostPort, ok := strings.CutPrefix(addr, tcpScheme); ok {
		if host, port, err := net.SplitHostPort(hostPort); err == nil && host != "" && port != "" {
			return "tcp", hostPort, nil
		}
	}
	return "", "", fmt.Errorf("bootstrap: address %q is neither %q followed by a socket path nor %q followed by host:port",
		addr, unixScheme, tcpScheme)
}

// Dial dials the bootstrap server of the job e describes, as its rank,
// with its secret (see [Dial]).
func (e Env) Dial(ctx context.Context) (*Client, error) {
	var secret []byte
	if e.Secret != "" {
		var err error
		if secret, err = e.SecretBytes(0); err != nil {
			return nil, err
		}
	}
	return Dial(ctx, e.Addr, e.Rank, e.Size, secret)
}

// ProcsEnv returns the GOMAXPROCS setting a launcher gives each of the
// ranks it starts on this host, ranksHere of them, as "GOMAXPROCS=k" with
// k the host's CPUs shared out among them (at least 1): the ranks of a
// host share its cores, as MPI launchers bind one rank per core. A Go
// runtime with more processors than its share parks and wakes idle
// threads on every message that a transport's reader goroutine hands to
// the rank (on a 2-core machine, two TCP ranks with 2 processors each
// took about 5 times as long per notified-put round trip as with 1). It
// returns "" when the user's environment env sets GOMAXPROCS already:
// that choice is kept.
func ProcsEnv(env []string, ranksHere int) string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return ""
		}
	}
	k := runtime.NumCPU() / max(1, ranksHere)
	return "GOMAXPROCS=" + strconv.Itoa(max(1, k))
}
