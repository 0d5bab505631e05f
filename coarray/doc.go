// Package coarray is coarray-style programming (Coarray Fortran) on narma:
// images that put into and get from each other's blocks of distributed
// arrays, synchronize with SYNC ALL, SYNC IMAGES and events, and, with the
// Notified Access of narma, learn that data arrived from the put itself:
// events attached to arrays (the EVENT ATTACH of Fanfarillo and Del
// Vento, "Notified Access in Coarray Fortran", EuroMPI/USA 2017) and
// Fortran 2023's notify variables.
//
// Every object lives in one symmetric heap per job: one narma window in a
// lifelong passive-target epoch, in which collective allocations get the
// same offset on every image. A put is a narma put into that window; an
// event or notify variable is one of its notification counters, so a put
// into any array can notify any of them.
//
// # Images
//
// A job of n images is a narma job of n ranks, the image being the rank:
//
//	err := narma.Run(4, func(c *narma.Comm) error {
//		ctx := c.Context()
//		im, err := coarray.Init(ctx, c)
//		if err != nil {
//			return err
//		}
//		defer im.Finalize(ctx)
//		a, err := coarray.New[float64](ctx, im, 10) // real :: a(10)[*]
//		...
//	})
//
// Images are numbered from 0, as Go counts: image i here is image i+1 in
// Fortran.
//
// # From Fortran to Go
//
//	Fortran                                    Go
//	real, allocatable :: a(:)[:]               var a *coarray.Array[float64]
//	allocate(a(n)[*])                          a, err := coarray.New[float64](ctx, im, n)
//	deallocate(a)                              a.Free(ctx)
//	this_image(), num_images()                 im.ThisImage()+1, im.NumImages()
//	a(i) = x  (local)                          a.Local()[i-1] = x
//	a(lo:hi)[p] = x                            a.Put(p-1, lo-1, x)             // len(x) = hi-lo+1
//	x = a(lo:hi)[p]                            a.Get(p-1, lo-1, x)
//	sync all                                   im.SyncAll(ctx)
//	sync images([p, q])                        im.SyncImages(ctx, []int{p-1, q-1})
//	sync memory                                im.SyncMemory(ctx)
//	type(event_type) :: ev[*]                  ev, err := coarray.NewEvent(ctx, im)
//	event post(ev[p])                          ev.Post(p-1)
//	event wait(ev, until_count=k)              ev.Wait(ctx, k)
//	call event_query(ev, count)                count, err := ev.Query()
//	call event_attach(ev, a)  (proposed)       coarray.Attach(ctx, ev, a, 0, a.Len())
//	type(notify_type) :: nv[*]                 nv, err := coarray.NewNotify(ctx, im)
//	a(lo:hi)[p, notify=nv] = x                 a.Put(p-1, lo-1, x, coarray.WithNotify(nv))
//	notify wait(nv, until_count=k)             nv.Wait(ctx, k)
//	call co_sum(x)                             coarray.CoSum(ctx, im, x)
//	call co_max(x, result_image=p)             coarray.CoMax(ctx, im, x, coarray.ResultImage(p-1))
//	call co_broadcast(x, source_image=p)       coarray.CoBroadcast(ctx, im, x, p-1)
//	call co_reduce(x, f)                       coarray.CoReduce(ctx, im, x, f)
//	call atomic_add(v[p], k)                   coarray.AtomicAdd(v, p-1, 0, k)   // v: *Array[int64]
//	call atomic_fetch_add(v[p], k, old)        old, err := coarray.AtomicFetchAdd(v, p-1, 0, k)
//	call atomic_cas(v[p], old, cmp, new)       old, err := coarray.AtomicCAS(v, p-1, 0, cmp, new)
//	call atomic_ref(x, v[p])                   x, err := coarray.AtomicRef(v, p-1, 0)
//	type(lock_type) :: l[*]                    l, err := coarray.NewLock(ctx, im)
//	lock(l[p]); unlock(l[p])                   l.Lock(ctx, p-1); l.Unlock(ctx, p-1)
//	lock(l[p], acquired_lock=ok)               ok, err := l.TryLock(ctx, p-1)
//	critical ... end critical                  crit.Do(ctx, func() error { ... })   // crit from NewCritical
//	image_status(p), failed_images()           im.ImageStatus(p-1), im.FailedImages()
//
// Element types are narma's (the fixed-size integers and floats); Array
// is generic in its element type, so putting or getting the wrong type is
// a compile error, not a run-time one. Events, notify variables and arrays
// are made and freed collectively, by every image in the same order.
//
// # Segments
//
// As in Fortran, each image's execution is divided into segments by image
// control statements: SyncAll, SyncImages, Event.Post, Event.Wait,
// Notify.Wait, and the collective calls. A put or get that another image
// makes to this image's block, and this image's own accesses to it
// (through Local), must not conflict (one of them writing an element the
// other accesses) unless one segment is ordered before the other:
//
//   - SyncAll orders every image's segments before it before every
//     image's segments after it; SyncImages does so for the pairs that
//     name each other.
//   - Event.Post by image A on image B, then a Wait on B that this post
//     helps satisfy, orders A's segments before the post before B's
//     segments after the wait. Post completes A's earlier puts first, so
//     data put before a post is in place when the wait returns.
//   - A notified put (WithNotify, or a put into a range to which an event
//     is attached) orders only its own data: once the target's Wait for
//     it returns, that data is in place. This is Notified Access: no flush
//     and no separate post on the critical path.
//   - SyncMemory completes this image's puts but orders nothing by itself.
//
// A put's data is guaranteed to be at its target only at the origin's
// next SyncAll, SyncImages, SyncMemory or Post (or, for a notified put, by
// its notice); the source slice may be reused as soon as Put returns. A
// Get has its data when it returns.
//
// # Errors
//
// Calls return errors, never panic, on misuse: an image outside
// [0, NumImages()) wraps narma.ErrRank; an element range outside a block
// narma.ErrBounds; a freed array, event or notify variable, or any object
// after Finalize, narma.ErrFreed; conflicts with attached events
// ErrAttached; collective calls whose arguments differ between images
// narma.ErrCollective on the images that passed good ones. Errors are
// *narma.OpError values naming the call and the image; use errors.Is.
//
// # Contexts
//
// Calls that wait for other images (SyncAll, SyncImages, Wait, the
// collective constructors and Free) take a context.Context. Put, Get and
// Post take none, like the Fortran statements they stand for: they wait
// only for the completion of this image's own transfers, which the
// transport bounds, and they end with the job (the Comm's context) if
// another image fails.
package coarray
