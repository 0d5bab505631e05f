package engine

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/narma-rma/narma/internal/mem"
)

// ctxID is a message context: two-sided messages match only receives of
// their context, so that every communicator, and the collectives of
// each, have messages of their own.
type ctxID uint16

// maxCtx is the last message context there is.
const maxCtx = 1<<16 - 1

// Undefined is the color of a rank that takes part in a Split but wants
// no communicator from it, and the rank a translation gives for a rank
// that is not in the other group (MPI_UNDEFINED).
const Undefined = -32766

// group maps the ranks of a communicator to the ranks of its job (the
// endpoint's ranks): world[r] is the job rank of rank r, local[j] the
// rank of job rank j, or -1 for a job rank not in the communicator. A
// nil *group is the job itself.
type group struct {
	world []int
	local []int32
}

// newGroup returns the group of the job ranks world, in that order,
// within a job of size ranks.
func newGroup(world []int, size int) *group {
	g := &group{world: world, local: make([]int32, size)}
	for j := range g.local {
		g.local[j] = -1
	}
	for r, j := range world {
		g.local[j] = int32(r)
	}
	return g
}

// jobRank returns the job rank of the communicator's rank r, which is in
// [0, Size).
func (c *Comm) jobRank(r int) int {
	if c.grp == nil {
		return r
	}
	return c.grp.world[r]
}

// from returns what messages from src must come from to match: the job
// rank of the communicator's rank src, or AnySource.
func (c *Comm) from(src int) int {
	if src == AnySource {
		return AnySource
	}
	return c.jobRank(src)
}

// commRank returns the communicator's rank of job rank j, or -1 if j is
// not one of its ranks.
func (c *Comm) commRank(j int) int { return c.grp.rankOf(j) }

// rankOf returns the rank in g of job rank j, or -1 if j is not in g.
func (g *group) rankOf(j int) int {
	if g == nil {
		return j
	}
	if j < 0 || j >= len(g.local) {
		return -1
	}
	return int(g.local[j])
}

// JobRanks returns the job rank of each of the communicator's ranks, in
// rank order: the identity on the job's own communicators. Groups are
// built on it.
func (c *Comm) JobRanks() []int {
	if c.grp == nil {
		all := make([]int, c.size)
		for r := range all {
			all[r] = r
		}
		return all
	}
	return slices.Clone(c.grp.world)
}

// newContexts agrees with the other ranks of c on two fresh message
// contexts, collectively: each rank offers the next context it has not
// used and takes none below the largest offer, so a context agreed on is
// new to every rank of the new communicator, whatever communicators each
// made before. extra is gathered with the offers, for the caller.
//
// Communicators may be made concurrently by several goroutines of a rank
// (a library Dups its own while the program splits): each offer is
// reserved on its rank, and the agreed pair is then claimed in the
// rank's set of contexts in use; if any rank finds it claimed already by
// another communicator, every rank gives it back and they agree again,
// above it. The claim costs a second exchange.
func (c *Comm) newContexts(ctx context.Context, op string, extra []int64) (ctxID, [][]int64, error) {
	for {
		c.mu.Lock()
		mine := c.nextCtx
		c.nextCtx += 2 // reserved: a concurrent creation offers another
		c.mu.Unlock()
		rec := append([]int64{int64(mine)}, extra...)
		all := make([]int64, len(rec)*c.size)
		if err := c.Allgather(ctx, mem.Bytes(rec), mem.Bytes(all)); err != nil {
			return 0, nil, err
		}
		next := 0
		recs := make([][]int64, c.size)
		for r := range recs {
			recs[r] = all[r*len(rec) : (r+1)*len(rec)]
			next = max(next, int(recs[r][0]))
		}
		if next+1 > maxCtx {
			return 0, nil, opErr(op, c.rank, ErrInvalidArgs, "out of message contexts (%d communicators made)", maxCtx/2)
		}
		id := ctxID(next)
		c.mu.Lock()
		clash := c.ctxUsed(id) || c.ctxUsed(id+1)
		if !clash {
			c.useCtx(id, true)
			c.useCtx(id+1, true)
		}
		c.nextCtx = max(c.nextCtx, next+2)
		c.mu.Unlock()
		var flag [1]int64
		if clash {
			flag[0] = 1
		}
		flags := make([]int64, c.size)
		if err := c.Allgather(ctx, mem.Bytes(flag[:]), mem.Bytes(flags)); err != nil {
			return 0, nil, err
		}
		if !slices.Contains(flags, 1) {
			return id, recs, nil
		}
		if !clash {
			c.mu.Lock()
			c.useCtx(id, false)
			c.useCtx(id+1, false)
			c.mu.Unlock()
		}
	}
}

// ctxUsed reports whether context id belongs to a communicator of this
// rank; the caller holds c.mu.
func (k *core) ctxUsed(id ctxID) bool { return k.usedCtx[id/64]&(1<<(id%64)) != 0 }

// useCtx marks context id as in use, or not; the caller holds c.mu.
func (k *core) useCtx(id ctxID, used bool) {
	if used {
		k.usedCtx[id/64] |= 1 << (id % 64)
	} else {
		k.usedCtx[id/64] &^= 1 << (id % 64)
	}
}

// sub returns the communicator of the job ranks world, with contexts
// from id, for the rank of them that calls it.
func (c *Comm) sub(world []int, id ctxID) *Comm {
	g := newGroup(world, c.core.size)
	return &Comm{core: c.core, rank: int(g.local[c.core.rank]), size: len(world), grp: g, user: id, coll: id + 1}
}

// Split partitions the ranks of c by color, collectively: every rank
// calls it, and each gets a communicator of the ranks that passed its
// color, ordered by key and then by their rank in c (MPI_Comm_split). A
// rank that passes Undefined gets nil. Every rank returns an error if
// one passed a negative color other than Undefined.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	bad := int64(0)
	if color < 0 && color != Undefined {
		bad = 1
	}
	id, recs, err := c.newContexts(ctx, "Split", []int64{int64(color), int64(key), bad})
	if err != nil {
		return nil, err
	}
	for r, rec := range recs {
		if rec[3] != 0 {
			return nil, opErr("Split", c.rank, ErrInvalidArgs, "rank %d passed color %d (a color is >= 0 or Undefined)", r, rec[1])
		}
	}
	if color == Undefined {
		return nil, nil
	}
	var members []int
	for r, rec := range recs {
		if rec[1] == int64(color) {
			members = append(members, r)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int { return cmp.Compare(recs[a][2], recs[b][2]) })
	world := make([]int, len(members))
	for i, r := range members {
		world[i] = c.jobRank(r)
	}
	return c.sub(world, id), nil
}

// CreateComm returns the communicator of the ranks of c listed in ranks, in
// that order, collectively over c: every rank of c calls it with the same
// list, and ranks not in it get nil (MPI_Comm_create). The list is
// checked on every rank (ranks of c, none twice) and compared among them;
// a difference is an error on every rank.
func (c *Comm) CreateComm(ctx context.Context, ranks []int) (*Comm, error) {
	seen := make(map[int]bool, len(ranks))
	bad := int64(0)
	var why string
	for _, r := range ranks {
		if r < 0 || r >= c.size || seen[r] {
			bad, why = 1, fmt.Sprintf("rank %d is not in [0,%d) or listed twice", r, c.size)
			break
		}
		seen[r] = true
	}
	sum := listSum(ranks)
	id, recs, err := c.newContexts(ctx, "CreateComm", []int64{bad, sum})
	if err != nil {
		return nil, err
	}
	if bad != 0 {
		return nil, opErr("CreateComm", c.rank, ErrGroup, "%s", why)
	}
	for r, rec := range recs {
		if rec[1] != 0 {
			return nil, opErr("CreateComm", c.rank, ErrGroup, "rank %d passed a list that is not of distinct ranks", r)
		}
		if rec[2] != sum {
			return nil, opErr("CreateComm", c.rank, ErrCollective, "rank %d passed another list of ranks than this rank", r)
		}
	}
	if !seen[c.rank] {
		return nil, nil
	}
	world := make([]int, len(ranks))
	for i, r := range ranks {
		world[i] = c.jobRank(r)
	}
	return c.sub(world, id), nil
}

// listSum is a checksum of a list of ranks, to compare lists among ranks
// (FNV-1a over their little-endian bytes).
func listSum(ranks []int) int64 {
	h := fnv.New64a()
	var b [8]byte
	for _, r := range ranks {
		binary.LittleEndian.PutUint64(b[:], uint64(r))
		h.Write(b[:])
	}
	return int64(h.Sum64())
}
