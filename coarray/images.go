package coarray

import (
	"context"
	"fmt"
	"slices"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/symheap"
)

// DefaultHeapSize is the size of each image's symmetric heap, in bytes,
// when Init is given no WithHeapSize option.
const DefaultHeapSize = 1 << 20

// syncTag is the tag of SyncImages' messages, on the package's private
// duplicate of the job's Comm (no message of the program can match them).
const syncTag = 1

// ErrNoMemory reports that the symmetric heap has no free block large
// enough for New: give Init a larger WithHeapSize.
var ErrNoMemory = symheap.ErrNoMemory

// Images is one image's view of a coarray job: its image number, the
// number of images, its current team and the symmetric heap that holds
// every Array, Event and Notify made from it. Init makes it.
//
// An Images, and every object made from it, is used by one goroutine of
// its image at a time.
type Images struct {
	c       *narma.Comm
	priv    *narma.Comm // a duplicate of c for the package's own messages
	h       *symheap.Heap
	w       *narma.Win[byte] // the heap's window, in its lifelong LockAll epoch
	done    bool             // finalized
	initial *Team            // every image of c, on priv
	team    *Team            // the current team: initial, or ChangeTeam's
}

// Option configures Init.
type Option func(*config)

type config struct {
	heapSize int
}

// WithHeapSize sets the size of each image's symmetric heap in bytes
// (default DefaultHeapSize). Every array takes its length times its element
// size, rounded up to 8 bytes, from it; every image must pass the same
// size.
func WithHeapSize(bytes int) Option {
	return func(c *config) { c.heapSize = bytes }
}

// Init starts coarray programming on c, collectively: every image (every
// rank of c) calls it with the same options. It creates the symmetric
// heap. Finalize ends it.
func Init(ctx context.Context, c *narma.Comm, opts ...Option) (*Images, error) {
	const op = "coarray.Init"
	if c == nil {
		return nil, nilError(op, "Comm")
	}
	cfg := config{heapSize: DefaultHeapSize}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	priv, err := c.Dup(ctx)
	if err != nil {
		return nil, err
	}
	im := &Images{c: c, priv: priv}
	im.initial = &Team{im: im, number: -1, comm: priv, me: priv.Rank()}
	im.team = im.initial
	var local error
	if cfg.heapSize < 0 {
		local = im.errorf(op, narma.ErrInvalid, "heap size %d", cfg.heapSize)
	}
	if err := im.agree(ctx, opInit, op, local, int64(cfg.heapSize)); err != nil {
		return nil, err
	}
	h, err := symheap.New(ctx, priv, cfg.heapSize)
	if err != nil {
		return nil, err
	}
	im.h, im.w = h, h.Win()
	return im, nil
}

// ThisImage returns this image's number in the current team. Images are
// numbered from 0 to NumImages()-1, as Go counts and as narma numbers
// ranks (in the initial team the image is the rank of its Comm; inside
// ChangeTeam, its number in the team); Fortran's THIS_IMAGE() is
// ThisImage()+1.
func (im *Images) ThisImage() int { return im.team.me }

// NumImages returns the number of images of the current team, Fortran's
// NUM_IMAGES().
func (im *Images) NumImages() int { return im.team.comm.Size() }

// Comm returns the communicator of the job, for two-sided messages and
// narma's collectives (CoSum, CoMin, CoMax, CoReduce and CoBroadcast are
// Fortran's, on a private duplicate of it). Its ranks are the images of
// the initial team, whatever the current team.
func (im *Images) Comm() *narma.Comm { return im.c }

// ImageState is what IMAGE_STATUS says of an image.
type ImageState int

// The states of an image: failed once its transport declared its rank
// failed. There is no STAT_STOPPED_IMAGE: an image that ended (Finalize)
// while others run may look failed to them, as a rank that ended looks
// to its peers on some transports.
const (
	ImageRunning ImageState = iota // IMAGE_STATUS 0
	ImageFailed                    // STAT_FAILED_IMAGE
)

// String returns "running" or "failed".
func (s ImageState) String() string {
	if s == ImageFailed {
		return "failed"
	}
	return "running"
}

// ImageStatus reports whether image (of the current team) has failed, as
// far as this image knows: Fortran's IMAGE_STATUS(image+1).
func (im *Images) ImageStatus(image int) (ImageState, error) {
	const op = "coarray.ImageStatus"
	if err := im.check(op); err != nil {
		return ImageRunning, err
	}
	r, err := im.target(op, selector{}, image)
	if err != nil {
		return ImageRunning, err
	}
	if slices.Contains(im.c.Failed(), r) {
		return ImageFailed, nil
	}
	return ImageRunning, nil
}

// FailedImages returns the images of the current team known to have
// failed, in order: Fortran's FAILED_IMAGES() (with images numbered from
// 0).
func (im *Images) FailedImages() []int {
	if im == nil {
		return nil
	}
	failed := im.c.Failed()
	if im.team.ranks == nil {
		return failed
	}
	var out []int
	for _, r := range failed {
		if i := im.team.index(r); i >= 0 {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// SyncMemory completes every put this image issued, at its target, and
// makes this image's own stores to its blocks visible: Fortran's SYNC
// MEMORY. It synchronizes with no other image: pair it with a message,
// an event or a notify variable that tells the other image to look.
func (im *Images) SyncMemory(ctx context.Context) error {
	const op = "coarray.SyncMemory"
	if err := im.check(op); err != nil {
		return err
	}
	if err := im.w.FlushAll(ctx); err != nil {
		return err
	}
	return im.w.Sync()
}

// SyncAll is Fortran's SYNC ALL, collectively over the images of the
// current team: every put issued by any of them before its SyncAll is
// complete, and every local store made before it is visible, when SyncAll
// returns on any of them.
func (im *Images) SyncAll(ctx context.Context) error {
	const op = "coarray.SyncAll"
	if err := im.SyncMemory(ctx); err != nil {
		return err
	}
	if err := im.team.comm.Barrier(ctx); err != nil {
		return &narma.OpError{Op: op, Rank: im.c.Rank(), Err: err}
	}
	return nil
}

// SyncImages is Fortran's SYNC IMAGES(images), images being numbers in the
// current team: this image synchronizes pairwise with each image of the
// list, which must name this image in a SyncImages of its own. When it
// returns, every put each listed image issued before its SyncImages is
// complete and visible here, and theirs see ours. The k-th SyncImages
// naming image j on this image matches the k-th SyncImages naming this
// image on j.
//
// Each pair exchanges two empty messages on the package's private
// communicator of the team (this image sends to every listed image, then
// receives from each). Before sending, SyncImages completes every put this
// image issued, to any image: Fortran's segment order is transitive, so a
// put to a third image must be complete once a partner that later
// synchronizes with that image has heard from us. This image may appear in
// the list (it is skipped); an empty list synchronizes with nobody. An
// image outside [0, NumImages()) is refused with narma.ErrRank and a
// repeated image with narma.ErrInvalid, before anything is sent.
func (im *Images) SyncImages(ctx context.Context, images []int) error {
	const op = "coarray.SyncImages"
	if err := im.check(op); err != nil {
		return err
	}
	seen := make(map[int]bool, len(images))
	for _, j := range images {
		if err := im.checkImage(op, j); err != nil {
			return err
		}
		if seen[j] {
			return im.errorf(op, narma.ErrInvalid, "image %d appears twice in %v", j, images)
		}
		seen[j] = true
	}
	if err := im.SyncMemory(ctx); err != nil {
		return err
	}
	me, comm := im.ThisImage(), im.team.comm
	for _, j := range images {
		if j != me {
			if err := comm.Send(ctx, nil, j, syncTag); err != nil {
				return err
			}
		}
	}
	for _, j := range images {
		if j != me {
			if _, err := comm.Recv(ctx, nil, j, syncTag); err != nil {
				return err
			}
		}
	}
	return nil
}

// Finalize ends coarray programming, collectively, like the end of a
// Fortran program: it completes every image's puts, waits for all images
// and releases the symmetric heap. Every Array, Event and Notify made from
// im is unusable afterwards (their calls fail with narma.ErrFreed); they
// need not be freed first. It is refused inside ChangeTeam (ErrTeam).
func (im *Images) Finalize(ctx context.Context) error {
	const op = "coarray.Finalize"
	if err := im.check(op); err != nil {
		return err
	}
	if err := im.heapCall(op); err != nil {
		return err
	}
	if err := im.SyncAll(ctx); err != nil {
		return err
	}
	im.done = true
	return im.h.Close(ctx)
}

// nilError is the error of a call op on a nil object.
func nilError(op, what string) error {
	return &narma.OpError{Op: op, Rank: -1, Detail: "nil " + what, Err: narma.ErrInvalid}
}

// check reports whether im may be used.
func (im *Images) check(op string) error {
	if im == nil {
		return nilError(op, "Images")
	}
	if im.done {
		return im.errorf(op, narma.ErrFreed, "images finalized")
	}
	return nil
}

// checkImage checks an image number of the current team.
func (im *Images) checkImage(op string, image int) error {
	_, err := im.target(op, selector{}, image)
	return err
}

// errorf returns an error of the call op on this image, wrapping err.
func (im *Images) errorf(op string, err error, format string, args ...any) error {
	return &narma.OpError{Op: op, Rank: im.c.Rank(), Detail: fmt.Sprintf(format, args...), Err: err}
}

// Collective calls, numbered for agree.
const (
	opInit = iota + 1
	opNew
	opFreeArray
	opNewCounter
	opFreeCounter
	opAttach
	opDetach
	opFormTeam
)

// agree is the argument check of a collective call of the initial team,
// one allgather: every image contributes the call it is in, whether its
// local checks passed (local is nil) and the values that must be equal on
// every image. An image whose checks failed returns its own error; the
// others return an error wrapping narma.ErrCollective that names it. So no
// image goes on into the call's later collective steps alone, to wait
// there for ever. Every caller allocates or frees in the symmetric heap,
// which the images of the initial team do together: inside ChangeTeam,
// agree refuses at once (ErrTeam), without communicating.
func (im *Images) agree(ctx context.Context, call int, op string, local error, vals ...int64) error {
	if err := im.heapCall(op); err != nil {
		return err
	}
	rows, err := im.exchange(ctx, im.priv, call, op, local, vals...)
	if err != nil {
		return err
	}
	for r, got := range rows {
		for i, v := range vals {
			if got[i] != v {
				return im.errorf(op, narma.ErrCollective, "image %d passed %d where this image passed %d", r, got[i], v)
			}
		}
	}
	return nil
}

// heapCall refuses a call that allocates or frees in the symmetric heap
// inside ChangeTeam, with ErrTeam.
func (im *Images) heapCall(op string) error {
	if im.team != im.initial {
		return im.errorf(op, ErrTeam, "inside ChangeTeam (%v): the symmetric heap is allocated, freed and finalized by every image of the initial team together", im.team)
	}
	return nil
}

// exchange is the allgather of a collective call's arguments over comm
// (the images of a team, in team order): every image contributes the call
// it is in, whether its local checks passed and vals. It returns every
// image's vals, once every image is in the same call and passed its
// checks; else, as agree, this image's own error or one wrapping
// narma.ErrCollective.
func (im *Images) exchange(ctx context.Context, comm *narma.Comm, call int, op string, local error, vals ...int64) ([][]int64, error) {
	row := make([]int64, 2+len(vals))
	row[0] = int64(call)
	if local != nil {
		row[1] = 1
	}
	copy(row[2:], vals)
	all := make([]int64, len(row)*comm.Size())
	if err := narma.Allgather(ctx, comm, row, all); err != nil {
		return nil, err
	}
	if local != nil {
		return nil, local
	}
	rows := make([][]int64, comm.Size())
	for r := range rows {
		got := all[r*len(row) : (r+1)*len(row)]
		switch {
		case got[0] != row[0]:
			return nil, im.errorf(op, narma.ErrCollective, "image %d is in another collective call", r)
		case got[1] != 0:
			return nil, im.errorf(op, narma.ErrCollective, "the call failed on image %d", r)
		}
		rows[r] = got[2:]
	}
	return rows, nil
}
