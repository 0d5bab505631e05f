package bootstrap

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Environment variables of a job started by a launcher.
const (
	EnvRank      = "NARMA_RANK"      // this process's rank, 0..size-1
	EnvSize      = "NARMA_SIZE"      // number of ranks
	EnvAddr      = "NARMA_BOOTSTRAP" // bootstrap address, "unix:" + socket path
	EnvJob       = "NARMA_JOB"       // job identifier (names the shared-memory segments)
	EnvTransport = "NARMA_TRANSPORT" // transport between processes: "shm"
)

// unixScheme starts every bootstrap address.
const unixScheme = "unix:"

// Env is a rank's view of its job, read from the environment. The zero
// value describes no job.
type Env struct {
	Rank, Size           int
	Addr, Job, Transport string
}

// FromEnv reads the job environment. ok is false (and err nil) when
// NARMA_BOOTSTRAP is unset: no launcher started this process, which is a
// job of its own (a singleton). When it is set, a missing variable, a rank
// or size that is not a number, a size below 1 or a rank outside
// [0, size) is an error.
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
	return nil
}

// Environ returns the variables of e as "KEY=value" strings, to append to
// a child's environment.
func (e Env) Environ() []string {
	return []string{
		EnvRank + "=" + strconv.Itoa(e.Rank),
		EnvSize + "=" + strconv.Itoa(e.Size),
		EnvAddr + "=" + e.Addr,
		EnvJob + "=" + e.Job,
		EnvTransport + "=" + e.Transport,
	}
}

// socketPath returns the socket path of bootstrap address addr.
func socketPath(addr string) (string, error) {
	path, ok := strings.CutPrefix(addr, unixScheme)
	if !ok || path == "" {
		return "", fmt.Errorf("bootstrap: address %q is not %q followed by a socket path", addr, unixScheme)
	}
	return path, nil
}
