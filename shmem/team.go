package shmem

import (
	"context"
	"sync/atomic"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/symheap"
)

// Team is an ordered set of PEs, OpenSHMEM 1.5's shmem_team_t: the
// World's predefined TeamWorld and TeamShared, and the teams split from
// them (SplitStrided, Split2D). A PE's number in a team runs from 0 to
// NPEs()-1 in the team's order; every call that takes a team, or a
// context made from one, names PEs by these numbers, and TranslatePE
// converts them between teams.
//
// A team has its own narma communicator, a Split of its parent's, on
// which its collectives (TeamBroadcast, TeamSumReduce, ..., Sync) run:
// they never match the program's messages or another team's. Only
// members hold a team; a PE outside a split gets nil.
//
// A Team is used by the goroutine of its World, except CreateCtx, MyPE
// and NPEs, which any goroutine may call. Its zero value is not usable.
type Team struct {
	w   *World
	c   *narma.Comm // the team's communicator; the World's private one for TeamWorld
	pes []int       // the World PE of each team PE
	me  int         // this PE's number in the team

	// World PEs to team PEs: pes[i] == start + i*stride when stride is
	// not 0, else the map.
	start, stride int
	index         map[int]int

	predefined bool // TeamWorld or TeamShared: not destroyed
	destroyed  atomic.Bool
	ctxs       []*Ctx // live contexts made from the team; w.mu held
}

// Collective calls of the teams, numbered for symheap.Agree (past those
// of the heap).
const (
	callSplitStrided = symheap.CallUser + 10 + iota
	callSplit2D
)

// newTeam returns the team of World PEs pes over communicator c, whose
// rank i is pes[i].
func newTeam(w *World, c *narma.Comm, pes []int) *Team {
	t := &Team{w: w, c: c, pes: pes, me: c.Rank()}
	switch {
	case len(pes) == 1:
		t.start, t.stride = pes[0], 1
	case len(pes) > 1:
		t.start, t.stride = pes[0], pes[1]-pes[0]
		for i, pe := range pes {
			if pe != t.start+i*t.stride {
				t.stride = 0
				break
			}
		}
	}
	if t.stride == 0 {
		t.index = make(map[int]int, len(pes))
		for i, pe := range pes {
			t.index[pe] = i
		}
	}
	return t
}

// teamPE returns the team PE of World PE pe, or -1 if it is not a member.
func (t *Team) teamPE(pe int) int {
	if t.stride == 0 {
		if i, ok := t.index[pe]; ok {
			return i
		}
		return -1
	}
	d := pe - t.start
	if d%t.stride != 0 {
		return -1
	}
	if i := d / t.stride; i >= 0 && i < len(t.pes) {
		return i
	}
	return -1
}

// predefinedTeams makes TeamWorld and TeamShared, collectively (Init).
func (w *World) predefinedTeams(ctx context.Context) error {
	pes := make([]int, w.n)
	for i := range pes {
		pes[i] = i
	}
	w.world = newTeam(w, w.priv, pes)
	w.world.predefined = true
	// The PEs whose memory this PE maps (narma's SplitShared).
	sc, err := w.priv.SplitShared(ctx)
	if err != nil {
		return err
	}
	g := sc.Group()
	ranks := make([]int, g.Size())
	for i := range ranks {
		ranks[i] = i
	}
	if pes, err = g.TranslateRanks(ranks, w.priv.Group()); err != nil {
		return err
	}
	w.shared = newTeam(w, sc, pes)
	w.shared.predefined = true
	return nil
}

// TeamWorld returns the team of all PEs, in World order
// (SHMEM_TEAM_WORLD): its PE numbers are the World's. It is nil for a nil
// or finalized World.
func (w *World) TeamWorld() *Team {
	if w.ok("TeamWorld") != nil {
		return nil
	}
	return w.world
}

// TeamShared returns the team of the PEs whose symmetric heap this PE
// reaches with loads and stores (SHMEM_TEAM_SHARED), in World order:
// narma's Comm.SplitShared of the World's communicator. With goroutine
// ranks (narma.Run) that is every PE; with processes over shm every PE;
// over hybrid the PEs of this host; over tcp or libfabric this PE alone.
// It is nil for a nil or finalized World.
func (w *World) TeamShared() *Team {
	if w.ok("TeamShared") != nil {
		return nil
	}
	return w.shared
}

// MyPE returns this PE's number in t (shmem_team_my_pe), or -1 for a nil
// or destroyed team.
func (t *Team) MyPE() int {
	if t == nil || t.destroyed.Load() {
		return -1
	}
	return t.me
}

// NPEs returns the number of PEs in t (shmem_team_n_pes), or 0 for a
// nil or destroyed team.
func (t *Team) NPEs() int {
	if t == nil || t.destroyed.Load() {
		return 0
	}
	return len(t.pes)
}

// World returns the World that t belongs to (nil for a nil team).
func (t *Team) World() *World {
	if t == nil {
		return nil
	}
	return t.w
}

// ok guards the team's calls: a nil or destroyed team, or one of a
// finalized World, is an error.
func (t *Team) ok(op string) error {
	if t == nil || t.w == nil {
		return &narma.OpError{Op: "shmem." + op, Rank: -1, Detail: "nil Team", Err: narma.ErrInvalid}
	}
	if err := t.w.ok(op); err != nil {
		return err
	}
	if t.destroyed.Load() {
		return t.w.opErr(op, narma.ErrFreed, "destroyed Team")
	}
	return nil
}

// TranslatePE returns the number in dest of PE pe of src
// (shmem_team_translate_pe), or -1 if that PE is not in dest, if pe is
// not a PE of src, or if either team is nil, destroyed, or of another
// World.
func TranslatePE(src *Team, pe int, dest *Team) int {
	if src.NPEs() == 0 || dest.NPEs() == 0 || src.w != dest.w || pe < 0 || pe >= len(src.pes) {
		return -1
	}
	return dest.teamPE(src.pes[pe])
}

// SplitStrided makes the team of the size PEs of t numbered start,
// start+stride, ..., start+(size-1)*stride in t, in that order
// (shmem_team_split_strided): its PE i is PE start+i*stride of t. It is
// collective over t: every PE of t calls it with the same arguments, and
// the PEs outside the new team get a nil Team and no error.
//
// size is at least 1 and every PE named must be in t; stride may be
// negative (the team then runs down t), and 0 only if size is 1 (later
// OpenSHMEM versions allow both; 1.5 asks for a positive stride).
// Arguments that do not fit are refused on every PE with an error
// wrapping narma.ErrInvalid; arguments that differ between PEs, with an
// error wrapping narma.ErrCollective (and ErrNotSymmetric) on the PEs
// that see it.
func (t *Team) SplitStrided(ctx context.Context, start, stride, size int) (*Team, error) {
	const op = "Team.SplitStrided"
	if err := t.ok(op); err != nil {
		return nil, err
	}
	n := len(t.pes)
	var local error
	switch {
	case size < 1 || size > n:
		local = t.w.opErr(op, narma.ErrInvalid, "size %d in a team of %d", size, n)
	case start < 0 || start >= n:
		local = t.w.opErr(op, narma.ErrInvalid, "start %d not in [0,%d)", start, n)
	case stride == 0 && size > 1:
		local = t.w.opErr(op, narma.ErrInvalid, "stride 0 with size %d", size)
	default:
		// The last PE, start+(size-1)*stride, must be in [0, n): bounded
		// first, so that the product does not overflow.
		if stride != 0 && (size-1 > n/abs(stride) || start+(size-1)*stride < 0 || start+(size-1)*stride >= n) {
			local = t.w.opErr(op, narma.ErrInvalid, "start %d, stride %d, size %d run out of a team of %d", start, stride, size, n)
		}
	}
	if err := symheap.Agree(ctx, t.c, callSplitStrided, op, local, int64(start), int64(stride), int64(size)); err != nil {
		if local != nil {
			return nil, local
		}
		return nil, t.w.wrap(op, err)
	}
	color, key := narma.Undefined, 0
	if stride == 0 {
		stride = 1 // size 1
	}
	if d := t.me - start; d%stride == 0 && d/stride >= 0 && d/stride < size {
		color, key = 0, d/stride
	}
	c, err := t.c.Split(ctx, color, key)
	if err != nil {
		return nil, t.w.wrap(op, err)
	}
	if c == nil {
		return nil, nil
	}
	pes := make([]int, size)
	for i := range pes {
		pes[i] = t.pes[start+i*stride]
	}
	return newTeam(t.w, c, pes), nil
}

// Split2D arranges the PEs of t in a grid of xrange columns, PE p of t
// at column p%xrange of row p/xrange, and returns this PE's row as
// xteam and its column as yteam (shmem_team_split_2d): PE x of xteam is
// the PE in column x of the row, PE y of yteam the PE in row y of the
// column. If xrange does not divide the size of t, the last row is
// shorter, and so are the columns past its end; if xrange is larger than
// t, t is one row. It is collective over t, every PE passing the same
// xrange (at least 1; narma.ErrInvalid otherwise, on every PE), and every
// PE of t is in one xteam and one yteam.
func (t *Team) Split2D(ctx context.Context, xrange int) (xteam, yteam *Team, err error) {
	const op = "Team.Split2D"
	if err := t.ok(op); err != nil {
		return nil, nil, err
	}
	var local error
	if xrange < 1 {
		local = t.w.opErr(op, narma.ErrInvalid, "xrange %d", xrange)
	}
	if err := symheap.Agree(ctx, t.c, callSplit2D, op, local, int64(xrange)); err != nil {
		if local != nil {
			return nil, nil, local
		}
		return nil, nil, t.w.wrap(op, err)
	}
	n := len(t.pes)
	xrange = min(xrange, n)
	x, y := t.me%xrange, t.me/xrange
	xc, err := t.c.Split(ctx, y, x)
	if err != nil {
		return nil, nil, t.w.wrap(op, err)
	}
	yc, err := t.c.Split(ctx, x, y)
	if err != nil {
		return nil, nil, t.w.wrap(op, err)
	}
	var row, col []int
	for p := y * xrange; p < min((y+1)*xrange, n); p++ {
		row = append(row, t.pes[p])
	}
	for p := x; p < n; p += xrange {
		col = append(col, t.pes[p])
	}
	return newTeam(t.w, xc, row), newTeam(t.w, yc, col), nil
}

// Destroy ends t (shmem_team_destroy): it destroys the contexts made from
// t that are left, completing their operations first (Ctx.Destroy), and
// every later call on t or on them fails with an error wrapping
// narma.ErrFreed. It is local: the team's narma communicator holds
// nothing to free. TeamWorld and TeamShared are not destroyed (an error
// wrapping narma.ErrInvalid).
func (t *Team) Destroy(ctx context.Context) error {
	const op = "Team.Destroy"
	if err := t.ok(op); err != nil {
		return err
	}
	if t.predefined {
		return t.w.opErr(op, narma.ErrInvalid, "a predefined team (TeamWorld, TeamShared) is not destroyed")
	}
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	var first error
	for _, cx := range t.ctxs {
		if err := cx.quietLocked(ctx); err != nil && first == nil {
			first = err
		}
		cx.destroyed = true
	}
	t.ctxs = nil
	t.destroyed.Store(true)
	return first
}

// Sync waits until every PE of t has called it (shmem_team_sync). Unlike
// Barrier it completes no operation: puts issued before it may still be
// in flight after it.
func (t *Team) Sync(ctx context.Context) error {
	if err := t.ok("Team.Sync"); err != nil {
		return err
	}
	return t.w.wrap("Team.Sync", t.c.Barrier(ctx))
}

// Barrier completes this PE's operations (World.Quiet: those of every
// context too) and then waits until every PE of t has called it, so
// that afterwards every PE's puts issued before it are in place: the
// barrier of shmem_barrier_all over t.
func (t *Team) Barrier(ctx context.Context) error {
	if err := t.ok("Team.Barrier"); err != nil {
		return err
	}
	if err := t.w.Quiet(ctx); err != nil {
		return err
	}
	return t.w.wrap("Team.Barrier", t.c.Barrier(ctx))
}

// SyncAll waits until every PE has called it (shmem_sync_all): Sync over
// TeamWorld.
func (w *World) SyncAll(ctx context.Context) error {
	if err := w.ok("SyncAll"); err != nil {
		return err
	}
	return w.wrap("SyncAll", w.priv.Barrier(ctx))
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
