// Package registry maps the name of a transport to how jobs over it start:
// jobs whose ranks are goroutines of one process (narma.Run, chosen by
// NARMA_TRANSPORT), jobs a launcher started (narma.Init, chosen by the
// launcher), and what a launcher does on a host for the transport (remove
// what dead jobs left, remove what a job leaves, say how it will run).
//
// A transport is one package and one Register call. The built-in ones
// (local, shm, tcp, hybrid) are registered by package builtin, which the
// in-process and launched starts import; a transport for tests only, such
// as async, registers itself when a test imports it, and so is not linked
// into programs.
package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport"
)

// Transport says how jobs over one transport start. Every function may be
// nil: the transport does not start that way.
type Transport struct {
	// Name is what NARMA_TRANSPORT and narmarun --transport call it.
	Name string
	// Summary is one line for listings.
	Summary string
	// Group makes n connected endpoints whose ranks are goroutines of
	// this process.
	Group func(n int) ([]transport.Endpoint, error)
	// Join makes this process's endpoint in a job a launcher started:
	// env says which rank, how many and where to meet.
	Join func(ctx context.Context, env bootstrap.Env) (*Joined, error)
	// Stale removes what jobs whose launcher died left on this host, and
	// returns the names of what it removed. A launcher calls it before it
	// starts a job.
	Stale func() ([]string, error)
	// Remove removes what job left on this host. A launcher calls it once
	// the job's ranks are gone.
	Remove func(job string) error
	// Status says how the transport will run on this host, for a
	// launcher's verbose output ("" for nothing to say).
	Status func() string

	// OneHost says that a launched job's ranks must all run on the
	// launcher's host (shared memory): a launcher refuses ranks on
	// other hosts.
	OneHost bool
	// Network says that the ranks of a launched job talk over TCP: a
	// launcher gives each an address to listen on, and passes on its
	// settings for TCP peers (timeout, polling).
	Network bool
}

// Joined is a rank's place in a launched job, as a transport's Join makes
// it.
type Joined struct {
	// Endpoint is the rank's endpoint.
	Endpoint transport.Endpoint
	// Name is the transport that runs, which may differ from the one
	// asked for (a hybrid job whose hosts each run one rank runs tcp).
	Name string
	// Boot is the connection to the launcher's bootstrap: it stays open,
	// watched, while the process runs (see package join).
	Boot *bootstrap.Client
	// Ready, if not nil, must be called once the rank's handlers are
	// installed and before anything is sent (a last bootstrap round):
	// the connection is watched only once it succeeded.
	Ready func(ctx context.Context) error
}

var (
	mu     sync.RWMutex
	byName = map[string]Transport{}
)

// Register adds t. It panics if t has no name or its name is taken: two
// packages registering one name is a mistake of the program.
func Register(t Transport) {
	mu.Lock()
	defer mu.Unlock()
	if t.Name == "" {
		panic("registry: Register of a transport without a name")
	}
	if _, ok := byName[t.Name]; ok {
		panic(fmt.Sprintf("registry: transport %q registered twice", t.Name))
	}
	byName[t.Name] = t
}

// Lookup returns the transport called name.
func Lookup(name string) (Transport, bool) {
	mu.RLock()
	defer mu.RUnlock()
	t, ok := byName[name]
	return t, ok
}

// Names returns the names of the registered transports that start with
// the function pick returns, in order; all of them if pick is nil.
func Names(pick func(Transport) bool) []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for name, t := range byName {
		if pick == nil || pick(t) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// All returns the registered transports, ordered by name.
func All() []Transport {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Transport, 0, len(byName))
	for _, t := range byName {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Transport) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Group makes n endpoints of the transport called name, whose ranks are
// goroutines of this process.
func Group(name string, n int) ([]transport.Endpoint, error) {
	t, ok := Lookup(name)
	if !ok || t.Group == nil {
		return nil, fmt.Errorf("unknown in-process transport %q (want %s)", name, list(Names(func(t Transport) bool { return t.Group != nil })))
	}
	return t.Group(n)
}

// list joins names as "a, b or c".
func list(names []string) string {
	switch len(names) {
	case 0:
		return "none registered"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
