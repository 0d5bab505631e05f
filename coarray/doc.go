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
// Fortran. Team numbers are Fortran's: positive, and -1 for the initial
// team.
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
//	type(team_type) :: t                       var t *coarray.Team
//	form team (n, t)                           t, err := im.FormTeam(ctx, n)
//	form team (n, t, new_index=k)              t, err := im.FormTeam(ctx, n, coarray.NewIndex(k-1))
//	change team (t) ... end team               err := im.ChangeTeam(ctx, t, func() error { ... })
//	team_number(), team_number(t)              im.TeamNumber(), t.Number()
//	get_team(parent_team)                      t, err := im.GetTeam(coarray.ParentTeam)
//	this_image(t), num_images(t)               t.ThisImage()+1, t.NumImages()
//	x = a(i)[p, team=t]                        a.In(t).Get(p-1, i-1, x)
//	a(i)[p, team_number=n] = x                 a.InTeamNumber(n).Put(p-1, i-1, x)
//
// Element types are narma's (the fixed-size integers and floats); Array
// is generic in its element type, so putting or getting the wrong type is
// a compile error, not a run-time one. Events, notify variables and arrays
// are made and freed collectively, by every image in the same order.
//
// # Teams
//
// FormTeam splits the images of the current team into teams by number,
// collectively; ChangeTeam runs a function with one of them as the
// current team, synchronizing the team's images before and after it, as
// CHANGE TEAM and END TEAM do. Inside, every image number is a number in
// the team, from 0: ThisImage, NumImages, SyncAll, SyncImages, the
// collectives, Put, Get, the atomics, Event.Post, the locks, ImageStatus
// and FailedImages. Arrays, events, notify variables and locks made
// before the change stay usable, numbered in the team; In and
// InTeamNumber number an Array's images in an ancestor team (TEAM=) or a
// sibling team (TEAM_NUMBER=; -1 is the initial team). Teams nest:
// FormTeam and ChangeTeam inside the function form and enter subteams.
//
// Every object lives in the one symmetric heap of the job, allocated by
// every image of the initial team together. So, unlike Fortran, no array,
// event, notify variable, lock or critical construct can be made or freed
// inside ChangeTeam (the call fails at once with ErrTeam, on the image
// that makes it, without communicating); make them before, and free them
// after. A Critical made before excludes every image of the job inside
// any team. Each FormTeam makes a communicator, which takes a message
// context of the job for good (there are some tens of thousands): form a
// team once and change into it as often as needed.
//
// # Segments
//
// As in Fortran, each image's execution is divided into segments by image
// control statements: SyncAll, SyncImages, Event.Post, Event.Wait,
// Notify.Wait, FormTeam, ChangeTeam (as it starts the function and as it
// ends), and the collective calls. A put or get that another image
// makes to this image's block, and this image's own accesses to it
// (through Local), must not conflict (one of them writing an element the
// other accesses) unless one segment is ordered before the other:
//
//   - SyncAll orders the segments before it of every image of the
//     current team before their segments after it; FormTeam and the two
//     synchronizations of ChangeTeam are SyncAll of the current team and
//     of the new team. SyncImages does so for the pairs that name each
//     other.
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
// [0, NumImages()) of the current team wraps narma.ErrRank; an element
// range outside a block narma.ErrBounds; a freed array, event or notify
// variable, or any object after Finalize, narma.ErrFreed; conflicts with
// attached events ErrAttached; collective calls whose arguments differ
// between images narma.ErrCollective on the images that passed good
// ones. Errors are
// *narma.OpError values naming the call and the image (its number in the
// initial team); use errors.Is. Teams add ErrTeam: a call that needs
// every image of the job made inside ChangeTeam, or a team that is not
// the current one's child (ChangeTeam), ancestor or sibling (In,
// InTeamNumber). A team number below 1 is narma.ErrInvalid, and a
// NewIndex outside its team narma.ErrRank.
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
