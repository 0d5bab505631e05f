package narma

import (
	"context"
	"fmt"
	"slices"

	"github.com/narma-rma/narma/internal/engine"
)

// Undefined is the color of a rank that takes part in Split but joins no
// communicator, and the rank that Group.Rank and TranslateRanks give for
// a rank that is not in a group (MPI_UNDEFINED).
const Undefined = -32766

// Undefined must be the engine's: an index other than 0 is out of range.
var _ = [1]struct{}{}[Undefined-engine.Undefined]

// Group is an ordered set of the ranks of a job, as MPI's groups are: the
// ranks of a communicator (Comm.Group), or a set made from one by Incl,
// Excl, Union, Intersection and Difference. A group's rank i is its i-th
// member. Groups are values: they change nothing, and the operations
// return new ones. The zero Group is empty.
//
// A Group belongs to the rank that made it, and to its job: it says which
// of the ranks is the caller (Rank), and it is compared with other
// groups of the same rank.
type Group struct {
	ranks []int // the members' ranks in the job, in group order
	me    int   // the caller's rank in the job
}

// Group returns the group of c's ranks, in c's order.
func (c *Comm) Group() Group {
	ranks := c.e.JobRanks()
	return Group{ranks: ranks, me: ranks[c.e.Rank()]}
}

// Size returns the number of ranks in g.
func (g Group) Size() int { return len(g.ranks) }

// Rank returns the caller's rank in g, or Undefined if it is not a
// member.
func (g Group) Rank() int {
	if i := slices.Index(g.ranks, g.me); i >= 0 {
		return i
	}
	return Undefined
}

// Incl returns the group of g's ranks listed, in the order listed
// (MPI_Group_incl). A rank outside [0, g.Size()) or listed twice is an
// error.
func (g Group) Incl(ranks ...int) (Group, error) {
	if err := g.check("Incl", ranks); err != nil {
		return Group{}, err
	}
	h := Group{ranks: make([]int, len(ranks)), me: g.me}
	for i, r := range ranks {
		h.ranks[i] = g.ranks[r]
	}
	return h, nil
}

// Excl returns the group of g's ranks not listed, in g's order
// (MPI_Group_excl). A rank outside [0, g.Size()) or listed twice is an
// error.
func (g Group) Excl(ranks ...int) (Group, error) {
	if err := g.check("Excl", ranks); err != nil {
		return Group{}, err
	}
	h := Group{me: g.me}
	for r, j := range g.ranks {
		if !slices.Contains(ranks, r) {
			h.ranks = append(h.ranks, j)
		}
	}
	return h, nil
}

// check checks a list of g's ranks: each in range, none twice.
func (g Group) check(op string, ranks []int) error {
	seen := make([]bool, len(g.ranks))
	for _, r := range ranks {
		if r < 0 || r >= len(g.ranks) {
			return groupErr(op, g, fmt.Sprintf("rank %d not in [0,%d)", r, len(g.ranks)), ErrRank)
		}
		if seen[r] {
			return groupErr(op, g, fmt.Sprintf("rank %d listed twice", r), ErrGroup)
		}
		seen[r] = true
	}
	return nil
}

func groupErr(op string, g Group, detail string, err error) error {
	return &OpError{Op: "Group." + op, Rank: g.me, Detail: detail, Err: err}
}

// Union returns the ranks of g, then those of h not in g, in their orders
// (MPI_Group_union).
func (g Group) Union(h Group) Group {
	u := Group{ranks: slices.Clone(g.ranks), me: g.me}
	if len(g.ranks) == 0 {
		u.me = h.me
	}
	for _, j := range h.ranks {
		if !slices.Contains(g.ranks, j) {
			u.ranks = append(u.ranks, j)
		}
	}
	return u
}

// Intersection returns the ranks of g that are in h, in g's order
// (MPI_Group_intersection).
func (g Group) Intersection(h Group) Group {
	u := Group{me: g.me}
	for _, j := range g.ranks {
		if slices.Contains(h.ranks, j) {
			u.ranks = append(u.ranks, j)
		}
	}
	return u
}

// Difference returns the ranks of g that are not in h, in g's order
// (MPI_Group_difference).
func (g Group) Difference(h Group) Group {
	u := Group{me: g.me}
	for _, j := range g.ranks {
		if !slices.Contains(h.ranks, j) {
			u.ranks = append(u.ranks, j)
		}
	}
	return u
}

// Equal reports whether g and h have the same ranks in the same order
// (MPI_IDENT).
func (g Group) Equal(h Group) bool { return slices.Equal(g.ranks, h.ranks) }

// TranslateRanks returns, for each of g's ranks listed, its rank in h, or
// Undefined if it is not in h (MPI_Group_translate_ranks). A rank outside
// [0, g.Size()) is an error; ProcNull translates to ProcNull.
func (g Group) TranslateRanks(ranks []int, h Group) ([]int, error) {
	out := make([]int, len(ranks))
	for i, r := range ranks {
		switch {
		case r == ProcNull:
			out[i] = ProcNull
		case r < 0 || r >= len(g.ranks):
			return nil, groupErr("TranslateRanks", g, fmt.Sprintf("rank %d not in [0,%d)", r, len(g.ranks)), ErrRank)
		default:
			out[i] = Undefined
			if k := slices.Index(h.ranks, g.ranks[r]); k >= 0 {
				out[i] = k
			}
		}
	}
	return out, nil
}

// Split partitions c's ranks by color, collectively: every rank of c
// calls it, and gets a new communicator of the ranks that passed the same
// color, ordered by key, ties broken by rank in c (MPI_Comm_split). A
// rank that passes Undefined joins none and gets nil. A color is >= 0 or
// Undefined; another is an error, on every rank.
//
// The new communicator has its own message contexts, as Dup's: its
// messages, collectives, windows and notices never meet c's. Its ranks
// are numbered from 0; every rank its calls take or report (targets,
// sources, Status, notices) is a rank of it. Closing it does nothing.
//
// Goroutines of one rank may make communicators (Dup, Split, Create,
// SplitShared) concurrently: the ranks agree on contexts that none of
// them uses. A failure of a rank outside the communicator does not fail
// its fences and lock waits, but still ends its waits for AnySource, as
// all of a job's failures do until AckFailures.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	s, err := c.e.Split(ctx, color, key)
	if err != nil || s == nil {
		return nil, err
	}
	return &Comm{e: s, ctx: c.ctx}, nil
}

// Create returns a communicator of the ranks of g, in g's order,
// collectively over c: every rank of c calls it with the same group, a
// subset of c's ranks, and ranks not in g get nil (MPI_Comm_create).
// Ranks that pass different groups get an error wrapping ErrCollective;
// a group with a rank outside c, an error wrapping ErrGroup. The new
// communicator is as Split's.
func (c *Comm) Create(ctx context.Context, g Group) (*Comm, error) {
	in, err := g.TranslateRanks(upTo(g.Size()), c.Group())
	if err != nil {
		return nil, err
	}
	for i, r := range in {
		if r == Undefined {
			// Still take part, so that the others return too: pass a
			// list every rank refuses.
			_, _ = c.e.CreateComm(ctx, []int{-1})
			return nil, &OpError{Op: "Create", Rank: c.Rank(), Detail: fmt.Sprintf("rank %d of the group is not in the communicator", i), Err: ErrGroup}
		}
	}
	s, err := c.e.CreateComm(ctx, in)
	if err != nil || s == nil {
		return nil, err
	}
	return &Comm{e: s, ctx: c.ctx}, nil
}

// upTo returns 0, 1, ..., n-1.
func upTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
