package transporttest

import (
	"context"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/transport"
)

// FlushCounter wraps an endpoint for tests of the layers above a
// transport: it counts the flushes asked of it, at both ends (Flush,
// FlushAll) and at the origin only (FlushLocal, FlushLocalAll, which it
// serves with the inner endpoint's full ones: a transport.LocalFlusher).
// Its Caps say that it is not synchronous, so that an engine asks it to
// flush.
type FlushCounter struct {
	transport.Endpoint
	Flushes, LocalFlushes atomic.Int32
}

// Caps returns the inner endpoint's capabilities, without Synchronous.
func (f *FlushCounter) Caps() transport.Caps {
	c := f.Endpoint.Caps()
	c.Synchronous = false
	return c
}

// Flush counts a flush and flushes the inner endpoint.
func (f *FlushCounter) Flush(ctx context.Context, t int) error {
	f.Flushes.Add(1)
	return f.Endpoint.Flush(ctx, t)
}

// FlushAll counts a flush and flushes the inner endpoint.
func (f *FlushCounter) FlushAll(ctx context.Context) error {
	f.Flushes.Add(1)
	return f.Endpoint.FlushAll(ctx)
}

// FlushLocal counts a local flush and flushes the inner endpoint.
func (f *FlushCounter) FlushLocal(ctx context.Context, t int) error {
	f.LocalFlushes.Add(1)
	return f.Endpoint.Flush(ctx, t)
}

// FlushLocalAll counts a local flush and flushes the inner endpoint.
func (f *FlushCounter) FlushLocalAll(ctx context.Context) error {
	f.LocalFlushes.Add(1)
	return f.Endpoint.FlushAll(ctx)
}
