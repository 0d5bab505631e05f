package coarray

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/narma-rma/narma"
)

// Teams: Fortran 2018's FORM TEAM, CHANGE TEAM ... END TEAM, TEAM_NUMBER,
// GET_TEAM, and the TEAM= and TEAM_NUMBER= image selectors of coindexed
// accesses.
//
// A Team is one image's view of a team: its number, its images (each
// team image's image in the initial team, in team order) and a private
// communicator of those images, split from the current team's when the
// team was formed, on which the team's SyncAll, SyncImages and
// collectives run. The current team is a field of the Images handle,
// which belongs to one image: ChangeTeam sets it for the block it runs
// and puts the parent back afterwards, so nothing is shared between
// images. Every object of the symmetric heap stays where it is; calls
// translate the team's image numbers into the initial team's, the ranks
// of the heap's window.

// ErrTeam reports a call that teams do not allow: allocating or freeing
// arrays, events, notify variables, locks or critical constructs, Attach,
// Detach or Finalize inside ChangeTeam (the symmetric heap is one window
// of the initial team, whose allocations every image makes together);
// ChangeTeam into a team that the current team did not form; a team
// selector (Array.In, Array.InTeamNumber) that names neither the current
// team, nor one of its ancestors, nor a sibling; GetTeam(ParentTeam) in
// the initial team.
var ErrTeam = errors.New("coarray: invalid use of teams")

// Team is a team of images, Fortran's type(team_type): FormTeam makes
// one, ChangeTeam runs a block with it as the current team, and
// GetTeam returns the current, parent or initial team. A Team belongs to
// the Images of the image that formed it (like the Images, it is one
// image's handle); Teams are never freed.
type Team struct {
	im     *Images
	number int         // -1 for the initial team
	parent *Team       // the team that formed this one; nil for the initial team
	comm   *narma.Comm // the team's images in team order, private to the package
	ranks  []int       // the initial image of each team image; nil in the initial team
	me     int         // this image's index in the team
	family map[int][]int
	// family holds every team formed by the same FormTeam, by number:
	// their initial images in team order (TEAM_NUMBER= selectors of
	// sibling teams). Nil for the initial team.
}

// Number returns the team's number: the number FormTeam was given, or -1
// for the initial team (Fortran's TEAM_NUMBER(TEAM=t)). A nil Team has
// number 0, which no team has.
func (t *Team) Number() int {
	if t == nil {
		return 0
	}
	return t.number
}

// NumImages returns the number of images of the team: Fortran's
// NUM_IMAGES(TEAM=t). It is 0 for a nil Team.
func (t *Team) NumImages() int {
	if t == nil {
		return 0
	}
	return t.comm.Size()
}

// ThisImage returns this image's number in the team, from 0 to
// NumImages()-1: Fortran's THIS_IMAGE(TEAM=t) is ThisImage()+1. It is -1
// for a nil Team.
func (t *Team) ThisImage() int {
	if t == nil {
		return -1
	}
	return t.me
}

// String names the team: "team 3", or "the initial team".
func (t *Team) String() string {
	switch {
	case t == nil:
		return "no team"
	case t.parent == nil:
		return "the initial team"
	}
	return fmt.Sprintf("team %d", t.number)
}

// initialImage returns the initial image of team image i (in range).
func (t *Team) initialImage(i int) int {
	if t.ranks == nil {
		return i
	}
	return t.ranks[i]
}

// index returns the team image of initial image r, or -1 if r is not in
// the team.
func (t *Team) index(r int) int {
	if t.ranks == nil {
		return r
	}
	return slices.Index(t.ranks, r)
}

// TeamOption configures FormTeam.
type TeamOption func(*teamConfig)

type teamConfig struct {
	index    int
	indexSet bool
}

// NewIndex asks for index as this image's number in the team it forms:
// Fortran's NEW_INDEX= specifier (NewIndex(i) is NEW_INDEX=i+1). Images
// of one new team must ask for different indices in [0, size of the new
// team). Images of the team that pass no NewIndex take the indices nobody
// asked for, in the order of their numbers in the current team.
func NewIndex(index int) TeamOption {
	return func(c *teamConfig) { c.index, c.indexSet = index, true }
}

// FormTeam forms teams out of the images of the current team,
// collectively: every image of the current team calls it, and the images
// that pass the same number (a positive integer) make one team. It
// returns this image's team, which becomes current in ChangeTeam:
// Fortran's FORM TEAM (number, team [, NEW_INDEX=]). Images of a new team
// are numbered from 0 in the order of their numbers in the current team,
// unless NewIndex says otherwise.
//
// Like FORM TEAM, it synchronizes the images of the current team as
// SyncAll does; it changes nothing else: the current team stays, and the
// team's images keep every array, event and lock. It costs an allgather
// and a split of the current team's communicator, which takes a message
// context of the job for good: form teams once and change into them as
// often as needed.
//
// A number below 1 is refused with narma.ErrInvalid and a NewIndex outside
// the new team with narma.ErrRank; two images asking for the same index
// get narma.ErrInvalid. The images that passed good arguments get an error
// wrapping narma.ErrCollective naming an image that did not, and no team
// is formed on any image.
func (im *Images) FormTeam(ctx context.Context, number int, opts ...TeamOption) (*Team, error) {
	const op = "coarray.FormTeam"
	if im == nil {
		return nil, im.check(op)
	}
	cfg := teamConfig{index: -1}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	local := im.check(op)
	switch {
	case local != nil:
	case number < 1:
		local = im.errorf(op, narma.ErrInvalid, "team number %d: a team number is positive", number)
	case cfg.indexSet && cfg.index < 0:
		local = im.errorf(op, narma.ErrRank, "NewIndex(%d): an index is >= 0", cfg.index)
	default:
		// FORM TEAM is an image control statement: with the allgather,
		// which no image leaves before every image has come, this is a
		// SyncAll of the current team.
		local = im.SyncMemory(ctx)
	}
	cur := im.team
	rows, err := im.exchange(ctx, cur.comm, opFormTeam, op, local, int64(number), int64(cfg.index))
	if err != nil {
		return nil, err
	}

	// Every image computes the same partition from the same rows.
	members := map[int][]int{} // number -> current-team images, in order
	for r, row := range rows {
		members[int(row[0])] = append(members[int(row[0])], r)
	}
	type fault struct {
		err    error // the sentinel
		detail string
	}
	faults := make([]*fault, len(rows))
	family := make(map[int][]int, len(members))
	for num, ms := range members {
		order := make([]int, len(ms)) // team image -> current-team image
		for i := range order {
			order[i] = -1
		}
		for _, r := range ms {
			k := int(rows[r][1])
			switch {
			case k < 0:
			case k >= len(ms):
				faults[r] = &fault{narma.ErrRank, fmt.Sprintf("NewIndex(%d) outside team %d of %d images", k, num, len(ms))}
			case order[k] >= 0:
				faults[r] = &fault{narma.ErrInvalid, fmt.Sprintf("images %d and %d both asked for NewIndex(%d) in team %d", order[k], r, k, num)}
				faults[order[k]] = faults[r]
			default:
				order[k] = r
			}
		}
		free := 0
		for _, r := range ms {
			if rows[r][1] >= 0 {
				continue
			}
			for order[free] >= 0 {
				free++
			}
			order[free] = r
		}
		family[num] = order
	}
	me := cur.me
	if f := faults[me]; f != nil {
		return nil, im.errorf(op, f.err, "%s", f.detail)
	}
	for r, f := range faults {
		if f != nil {
			return nil, im.errorf(op, narma.ErrCollective, "image %d passed a bad NewIndex: %s", r, f.detail)
		}
	}

	order := family[number]
	index := slices.Index(order, me)
	for _, o := range family {
		for i, r := range o {
			o[i] = cur.initialImage(r)
		}
	}
	sub, err := cur.comm.Split(ctx, number, index)
	if err != nil {
		return nil, im.errorf(op, err, "team %d", number)
	}
	if sub == nil || sub.Rank() != index || sub.Size() != len(order) {
		return nil, im.errorf(op, narma.ErrCollective, "the split of the current team disagrees with the teams formed")
	}
	return &Team{im: im, number: number, parent: cur, comm: sub, ranks: order, me: index, family: family}, nil
}

// ChangeTeam runs f with team as the current team: Fortran's CHANGE TEAM
// (team) ... END TEAM. Every image of the current team calls it, each
// with the team FormTeam gave it. Inside f, ThisImage and NumImages are
// the team's; SyncAll, SyncImages, the collectives (CoSum, CoMin, CoMax,
// CoReduce, CoBroadcast), Put, Get, the atomics, Event.Post and the locks
// number images in the team, and reach the images of the initial team
// that those team images are. Arrays, events and locks made before keep
// working; new ones cannot be made, nor old ones freed (ErrTeam). FormTeam
// and ChangeTeam inside f nest teams.
//
// As in Fortran, the images of the team synchronize (SyncAll of the team)
// before f runs and again when it returns, whether or not it returned an
// error: puts among the team's images inside f are complete when
// ChangeTeam returns. ChangeTeam returns f's error, else the error of
// those synchronizations. If f panics, the current team is restored and
// the panic goes on, without the final synchronization.
//
// A nil team or f is refused with narma.ErrInvalid, a team that the
// current team did not form (one of another Images, the current team, an
// ancestor, a team formed inside another team) with ErrTeam; a refused
// ChangeTeam synchronizes with nobody and does not run f.
func (im *Images) ChangeTeam(ctx context.Context, team *Team, f func() error) error {
	const op = "coarray.ChangeTeam"
	if err := im.check(op); err != nil {
		return err
	}
	switch {
	case team == nil:
		return im.errorf(op, narma.ErrInvalid, "nil Team")
	case f == nil:
		return im.errorf(op, narma.ErrInvalid, "nil function")
	case team.im != im:
		return im.errorf(op, ErrTeam, "%v was formed by another Images", team)
	case team.parent != im.team:
		return im.errorf(op, ErrTeam, "%v was not formed by the current team (%v)", team, im.team)
	}
	if err := im.syncTeam(ctx, op, team); err != nil {
		return err
	}
	im.team = team
	defer func() { im.team = team.parent }()
	ferr := f()
	serr := im.syncTeam(ctx, op, team) // END TEAM
	switch {
	case serr == nil:
		return ferr
	case ferr == nil:
		return serr
	}
	return errors.Join(ferr, serr)
}

// syncTeam is SyncAll over the images of t.
func (im *Images) syncTeam(ctx context.Context, op string, t *Team) error {
	if err := im.SyncMemory(ctx); err != nil {
		return err
	}
	if err := t.comm.Barrier(ctx); err != nil {
		return im.errorf(op, err, "synchronizing %v", t)
	}
	return nil
}

// TeamNumber returns the number of the current team, -1 in the initial
// team: Fortran's TEAM_NUMBER().
func (im *Images) TeamNumber() int {
	if im == nil || im.team == nil {
		return -1
	}
	return im.team.number
}

// TeamLevel says which team GetTeam returns: Fortran's CURRENT_TEAM,
// PARENT_TEAM and INITIAL_TEAM.
type TeamLevel int

// The levels of GetTeam.
const (
	CurrentTeam TeamLevel = iota // the current team
	ParentTeam                   // the team that formed the current team
	InitialTeam                  // every image of the job
)

// GetTeam returns the current team, its parent or the initial team:
// Fortran's GET_TEAM(level). The initial team has no parent:
// GetTeam(ParentTeam) there fails with ErrTeam. An unknown level is
// refused with narma.ErrInvalid.
func (im *Images) GetTeam(level TeamLevel) (*Team, error) {
	const op = "coarray.GetTeam"
	if err := im.check(op); err != nil {
		return nil, err
	}
	switch level {
	case CurrentTeam:
		return im.team, nil
	case InitialTeam:
		return im.initial, nil
	case ParentTeam:
		if im.team.parent == nil {
			return nil, im.errorf(op, ErrTeam, "the initial team has no parent")
		}
		return im.team.parent, nil
	}
	return nil, im.errorf(op, narma.ErrInvalid, "team level %d", level)
}

// selector is the team an access numbers images in: the current team
// (the zero selector), a team given (TEAM=) or a team number (TEAM_NUMBER=).
type selector struct {
	team     *Team
	byTeam   bool
	number   int
	byNumber bool
}

// images returns the images an access with sel reaches: the initial image
// of each (nil for the initial team, whose images are the ranks), their
// number and the team's name for messages ("" for the initial team).
func (im *Images) images(op string, sel selector) (ranks []int, n int, name string, err error) {
	cur := im.team
	switch {
	case sel.byNumber:
		switch {
		case sel.number == -1:
			return nil, im.initial.comm.Size(), "", nil
		case sel.number < 1:
			return nil, 0, "", im.errorf(op, narma.ErrInvalid, "team number %d: a team number is positive, or -1 for the initial team", sel.number)
		case cur.family == nil:
			return nil, 0, "", im.errorf(op, ErrTeam, "team number %d in the initial team, which has no sibling teams", sel.number)
		}
		o, ok := cur.family[sel.number]
		if !ok {
			return nil, 0, "", im.errorf(op, ErrTeam, "team number %d names neither the current team (%d) nor a team formed with it", sel.number, cur.number)
		}
		return o, len(o), fmt.Sprintf("team %d", sel.number), nil
	case sel.byTeam:
		if sel.team == nil {
			return nil, 0, "", im.errorf(op, narma.ErrInvalid, "In(nil): nil Team")
		}
		for t := cur; t != nil; t = t.parent {
			if t == sel.team {
				return t.ranks, t.comm.Size(), t.name(), nil
			}
		}
		return nil, 0, "", im.errorf(op, ErrTeam, "%v is neither the current team (%v) nor one of its ancestors", sel.team, cur)
	}
	return cur.ranks, cur.comm.Size(), cur.name(), nil
}

// name is the team's name in messages about its images: "" for the
// initial team, whose images are simply the images.
func (t *Team) name() string {
	if t.parent == nil {
		return ""
	}
	return t.String()
}

// target checks image, a number in the team sel selects, and returns the
// initial image it is: the rank of the heap's window.
func (im *Images) target(op string, sel selector, image int) (int, error) {
	ranks, n, name, err := im.images(op, sel)
	if err != nil {
		return 0, err
	}
	if image < 0 || image >= n {
		if name == "" {
			return 0, im.errorf(op, narma.ErrRank, "image %d not in [0, %d)", image, n)
		}
		return 0, im.errorf(op, narma.ErrRank, "image %d not in [0, %d) of %s", image, n, name)
	}
	if ranks == nil {
		return image, nil
	}
	return ranks[image], nil
}

// describe names initial image r for a message: its number in the
// current team, or its initial number if it is not in the team.
func (im *Images) describe(r int) string {
	if i := im.team.index(r); i >= 0 {
		return fmt.Sprintf("image %d", i)
	}
	return fmt.Sprintf("initial image %d (not in the current team)", r)
}

// In returns a of another team's image numbers: a.In(t).Put(image, ...)
// is Fortran's a(...)[image+1, TEAM=t] = ..., image being a number in t,
// which must be the current team or one of its ancestors when the access
// is made (else ErrTeam; a nil t, narma.ErrInvalid). The view shares
// everything else with a: Put, Get and the atomic subroutines work on it;
// freeing either frees both.
func (a *Array[T]) In(t *Team) *Array[T] {
	if a == nil {
		return nil
	}
	b := *a
	b.sel = selector{team: t, byTeam: true}
	return &b
}

// InTeamNumber returns a of another team's image numbers:
// a.InTeamNumber(n).Get(image, ...) is Fortran's a(...)[image+1,
// TEAM_NUMBER=n]. n is -1 for the initial team, or the number of the
// current team or of a team formed with it by the same FormTeam (a
// sibling), when the access is made; another positive number fails with
// ErrTeam, another number below 1 with narma.ErrInvalid.
func (a *Array[T]) InTeamNumber(n int) *Array[T] {
	if a == nil {
		return nil
	}
	b := *a
	b.sel = selector{number: n, byNumber: true}
	return &b
}
