package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/ranktest"
)

// checkTeam checks that t is the team of World PEs want, in that order,
// as seen from this PE: its size, this PE's number, its members (through
// TranslatePE both ways) and the World PEs around it that are not in it.
func checkTeam(w *World, name string, t *Team, want []int) error {
	world := w.TeamWorld()
	me := slices.Index(want, w.MyPE())
	if me < 0 {
		if t != nil {
			return fmt.Errorf("%s: PE %d is not a member, and got a team of %v", name, w.MyPE(), t.pes)
		}
		return nil
	}
	if t == nil {
		return fmt.Errorf("%s: PE %d is a member of %v, and got no team", name, w.MyPE(), want)
	}
	if t.NPEs() != len(want) || t.MyPE() != me || t.World() != w {
		return fmt.Errorf("%s: NPEs %d, MyPE %d; want %d, %d", name, t.NPEs(), t.MyPE(), len(want), me)
	}
	for i, pe := range want {
		if got := TranslatePE(t, i, world); got != pe {
			return fmt.Errorf("%s: TranslatePE(team, %d, world) = %d, want %d", name, i, got, pe)
		}
	}
	for pe := range w.NPEs() {
		if got, want := TranslatePE(world, pe, t), slices.Index(want, pe); got != want {
			return fmt.Errorf("%s: TranslatePE(world, %d, team) = %d, want %d", name, pe, got, want)
		}
	}
	for _, pe := range []int{-1, len(want), narma.ProcNull} {
		if got := TranslatePE(t, pe, world); got != -1 {
			return fmt.Errorf("%s: TranslatePE(team, %d, world) = %d, want -1", name, pe, got)
		}
	}
	return nil
}

// The predefined teams: TeamWorld is the World; TeamShared is the PEs
// whose heap Ptr reaches (every PE of the tests' goroutine and shm jobs),
// and stores through Ptr land in their heaps.
func TestPredefinedTeams(t *testing.T) {
	run(t, 3, func(ctx context.Context, w *World) error {
		all := []int{0, 1, 2}
		if err := checkTeam(w, "TeamWorld", w.TeamWorld(), all); err != nil {
			return err
		}
		s, err := Alloc[int64](ctx, w, 3)
		if err != nil {
			return err
		}
		var mapped []int
		for pe := range 3 {
			if p := Ptr(w, s, pe); p != nil {
				if len(p) != 3 {
					return fmt.Errorf("Ptr(%d): %d elements", pe, len(p))
				}
				mapped = append(mapped, pe)
				p[w.MyPE()] = int64(10*w.MyPE() + pe + 1)
			}
		}
		if ranktest.WholeJobShares() && len(mapped) != 3 {
			return fmt.Errorf("Ptr reaches PEs %v, want all", mapped)
		}
		if err := checkTeam(w, "TeamShared", w.TeamShared(), mapped); err != nil {
			return err
		}
		if Ptr(w, s, 3) != nil || Ptr(w, s, -1) != nil || Ptr(w, s.Slice(0, 4), 0) != nil {
			return fmt.Errorf("Ptr of a bad PE or object is not nil")
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		for _, pe := range mapped {
			if got := s.Local(w)[pe]; got != int64(10*pe+w.MyPE()+1) {
				return fmt.Errorf("element %d stored by PE %d through Ptr: %d", pe, pe, got)
			}
		}
		if got := TranslatePE(w.TeamShared(), 0, w.TeamWorld()); got != mapped[0] {
			return fmt.Errorf("TranslatePE(shared, 0, world) = %d, want %d", got, mapped[0])
		}
		// The collectives of TeamShared run on a communicator of their
		// own, beside TeamWorld's.
		if err := w.TeamShared().Sync(ctx); err != nil {
			return err
		}
		if err := w.SyncAll(ctx); err != nil {
			return err
		}
		return Free(ctx, w, s)
	})
}

// SplitStrided with stride 1, 2, negative and 0 (size 1), and a split of
// a split; TranslatePE between all of them.
func TestSplitStrided(t *testing.T) {
	run(t, 6, func(ctx context.Context, w *World) error {
		world := w.TeamWorld()
		type split struct {
			name                string
			start, stride, size int
			want                []int
		}
		var teams []*Team
		for _, s := range []split{
			{"stride 1", 1, 1, 3, []int{1, 2, 3}},
			{"stride 2", 0, 2, 3, []int{0, 2, 4}},
			{"stride 2 from 1", 1, 2, 3, []int{1, 3, 5}},
			{"stride -2", 5, -2, 3, []int{5, 3, 1}},
			{"stride 0", 4, 0, 1, []int{4}},
			{"all", 0, 1, 6, []int{0, 1, 2, 3, 4, 5}},
		} {
			team, err := world.SplitStrided(ctx, s.start, s.stride, s.size)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			if err := checkTeam(w, s.name, team, s.want); err != nil {
				return err
			}
			teams = append(teams, team)
		}
		// A split of the stride-2 team (World PEs 0, 2, 4): its PEs 1 and
		// 2, World PEs 2 and 4; only its members take part.
		if even := teams[1]; even != nil {
			sub, err := even.SplitStrided(ctx, 1, 1, 2)
			if err != nil {
				return err
			}
			if err := checkTeam(w, "split of stride 2", sub, []int{2, 4}); err != nil {
				return err
			}
			if sub != nil {
				if got := TranslatePE(sub, 0, even); got != 1 {
					return fmt.Errorf("TranslatePE(sub, 0, even) = %d, want 1", got)
				}
				if got := TranslatePE(sub, 1, teams[0]); got != -1 {
					return fmt.Errorf("TranslatePE(sub, 1, {1,2,3}) = %d, want -1 (World PE 4)", got)
				}
				must(sub.Destroy(ctx))
			}
		}
		// Between two splits: World PE 3 is PE 2 of {1,2,3} and PE 1 of
		// {5,3,1}.
		if a, b := teams[0], teams[3]; a != nil && b != nil {
			if got := TranslatePE(a, 2, b); got != 1 {
				return fmt.Errorf("TranslatePE({1,2,3}, 2, {5,3,1}) = %d, want 1", got)
			}
			if got := TranslatePE(b, 0, a); got != -1 {
				return fmt.Errorf("TranslatePE({5,3,1}, 0, {1,2,3}) = %d, want -1", got)
			}
		}
		for _, team := range teams {
			if team != nil {
				if err := team.Destroy(ctx); err != nil {
					return err
				}
				if team.MyPE() != -1 || team.NPEs() != 0 || TranslatePE(team, 0, world) != -1 {
					return errors.New("a destroyed team still answers")
				}
			}
		}
		return nil
	})
}

// Split2D of 6 PEs into 2 rows of 3 and 3 rows of 2, with a short last
// row, and with more columns than PEs.
func TestSplit2D(t *testing.T) {
	run(t, 6, func(ctx context.Context, w *World) error {
		world := w.TeamWorld()
		for _, c := range []struct {
			xrange    int
			row, col  [][]int // by row and by column
			rowOf     []int   // the row of each World PE
			colOf     []int   // its column
			shortName string
		}{
			{3, [][]int{{0, 1, 2}, {3, 4, 5}}, [][]int{{0, 3}, {1, 4}, {2, 5}}, []int{0, 0, 0, 1, 1, 1}, []int{0, 1, 2, 0, 1, 2}, "2x3"},
			{2, [][]int{{0, 1}, {2, 3}, {4, 5}}, [][]int{{0, 2, 4}, {1, 3, 5}}, []int{0, 0, 1, 1, 2, 2}, []int{0, 1, 0, 1, 0, 1}, "3x2"},
			{4, [][]int{{0, 1, 2, 3}, {4, 5}}, [][]int{{0, 4}, {1, 5}, {2}, {3}}, []int{0, 0, 0, 0, 1, 1}, []int{0, 1, 2, 3, 0, 1}, "short last row"},
			{9, [][]int{{0, 1, 2, 3, 4, 5}}, [][]int{{0}, {1}, {2}, {3}, {4}, {5}}, []int{0, 0, 0, 0, 0, 0}, []int{0, 1, 2, 3, 4, 5}, "one row"},
		} {
			x, y, err := world.Split2D(ctx, c.xrange)
			if err != nil {
				return fmt.Errorf("%s: %w", c.shortName, err)
			}
			me := w.MyPE()
			if err := checkTeam(w, c.shortName+" x", x, c.row[c.rowOf[me]]); err != nil {
				return err
			}
			if err := checkTeam(w, c.shortName+" y", y, c.col[c.colOf[me]]); err != nil {
				return err
			}
			if x.MyPE() != c.colOf[me] || y.MyPE() != c.rowOf[me] {
				return fmt.Errorf("%s: x.MyPE %d, y.MyPE %d", c.shortName, x.MyPE(), y.MyPE())
			}
			must(x.Destroy(ctx))
			must(y.Destroy(ctx))
		}
		// A 2-D split of a split: World PEs 1, 3, 5 as one row of 2 and one
		// of 1.
		odd, err := world.SplitStrided(ctx, 1, 2, 3)
		if err != nil {
			return err
		}
		if odd != nil {
			x, y, err := odd.Split2D(ctx, 2)
			if err != nil {
				return err
			}
			rows := map[int][]int{1: {1, 3}, 3: {1, 3}, 5: {5}}
			cols := map[int][]int{1: {1, 5}, 5: {1, 5}, 3: {3}}
			if err := checkTeam(w, "odd x", x, rows[w.MyPE()]); err != nil {
				return err
			}
			if err := checkTeam(w, "odd y", y, cols[w.MyPE()]); err != nil {
				return err
			}
			if got := TranslatePE(y, 1, odd); w.MyPE() != 3 && got != 2 {
				return fmt.Errorf("TranslatePE(odd y, 1, odd) = %d, want 2", got)
			}
		}
		return nil
	})
}

// The team collectives, with roots and blocks numbered by team PE, on
// the rows and columns of a 2x3 grid of 6 PEs and on World PEs 1, 3, 5,
// checked against results worked out by hand.
func TestTeamCollectives(t *testing.T) {
	run(t, 6, func(ctx context.Context, w *World) error {
		me := w.MyPE()
		row, col, err := w.TeamWorld().Split2D(ctx, 3) // rows {0,1,2} {3,4,5}, columns {0,3} {1,4} {2,5}
		if err != nil {
			return err
		}
		odd, err := w.TeamWorld().SplitStrided(ctx, 1, 2, 3) // 1, 3, 5
		if err != nil {
			return err
		}
		src := alloc[int64](ctx, w, 6)
		dst := alloc[int64](ctx, w, 12)
		reset := func(vals ...int64) {
			copy(src.Local(w), vals)
			for i := range dst.Local(w) {
				dst.Local(w)[i] = -1
			}
		}
		want := func(what string, vals ...int64) error {
			if got := dst.Local(w)[:len(vals)]; !slices.Equal(got, vals) {
				return fmt.Errorf("PE %d: %s: %v, want %v", me, what, got, vals)
			}
			return nil
		}
		x, y := me%3, me/3

		// Broadcast from PE 1 of each column: World PEs 3, 4, 5.
		reset(int64(10*me), int64(me))
		if err := TeamBroadcast(ctx, col, dst, src, 2, 1); err != nil {
			return err
		}
		if err := want("column broadcast from 1", []int64{int64(10 * (x + 3)), int64(x + 3)}...); err != nil {
			return err
		}
		// Broadcast from PE 2 of each row: World PEs 2 and 5.
		reset(int64(me))
		if err := TeamBroadcast(ctx, row, dst, src, 1, 2); err != nil {
			return err
		}
		if err := want("row broadcast from 2", []int64{2, 5}[y]); err != nil {
			return err
		}

		// Reductions over rows: 0+1+2 = 3 and 3+4+5 = 12; products
		// 1*2*3 = 6 and 4*5*6 = 120 (PE numbers plus one).
		reset(int64(me), int64(me+1), int64(1<<me))
		if err := TeamSumReduce(ctx, row, dst, src, 1); err != nil {
			return err
		}
		if err := want("row sum", []int64{3, 12}[y]); err != nil {
			return err
		}
		if err := TeamProdReduce(ctx, row, dst, src.Slice(1, 2), 1); err != nil {
			return err
		}
		if err := want("row product", []int64{6, 120}[y]); err != nil {
			return err
		}
		// Over columns {x, x+3}: min x, max x+3; or of bits x and x+3.
		if err := TeamMinReduce(ctx, col, dst, src, 1); err != nil {
			return err
		}
		if err := want("column min", int64(x)); err != nil {
			return err
		}
		if err := TeamMaxReduce(ctx, col, dst, src, 2); err != nil {
			return err
		}
		if err := want("column max", int64(x+3), int64(x+4)); err != nil {
			return err
		}
		if err := TeamOrReduce(ctx, col, dst, src.Slice(2, 3), 1); err != nil {
			return err
		}
		if err := want("column or", int64(1<<x|1<<(x+3))); err != nil {
			return err
		}
		if err := TeamXorReduce(ctx, col, dst, src, 1); err != nil {
			return err
		}
		if err := want("column xor", int64(x^(x+3))); err != nil {
			return err
		}
		if err := TeamAndReduce(ctx, col, dst, src.Slice(1, 2), 1); err != nil {
			return err
		}
		if err := want("column and", int64((x+1)&(x+4))); err != nil {
			return err
		}

		// Alltoall in rows: block j of PE i's source is 100*World(i)+j, and
		// lands in block i of row PE j: this PE (row PE x) gets
		// 100*World(i)+x from each row PE i.
		reset(int64(100*me), int64(100*me+1), int64(100*me+2))
		if err := TeamAlltoall(ctx, row, dst, src, 1); err != nil {
			return err
		}
		if err := want("row alltoall", int64(100*(3*y)+x), int64(100*(3*y+1)+x), int64(100*(3*y+2)+x)); err != nil {
			return err
		}
		// Fcollect in columns: {x, x+3}, in column order.
		reset(int64(me))
		if err := TeamFcollect(ctx, col, dst, src, 1); err != nil {
			return err
		}
		if err := want("column fcollect", int64(x), int64(x+3)); err != nil {
			return err
		}

		if odd != nil {
			k := odd.MyPE()
			// Collect over World PEs 1, 3, 5, PE k giving k+1 copies of
			// its World PE.
			reset(int64(me), int64(me), int64(me))
			if err := TeamCollect(ctx, odd, dst, src, k+1); err != nil {
				return err
			}
			if err := want("odd collect", 1, 3, 3, 5, 5, 5); err != nil {
				return err
			}
			// Alltoalls with a source stride of 2 and a dest stride of 3:
			// block j (source element 2j) is 10*World+j; it lands at dest
			// element 3i on team PE j.
			reset(int64(10*me), -7, int64(10*me+1), -7, int64(10*me+2), -7)
			if err := TeamAlltoalls(ctx, odd, dst, src, 3, 2, 1); err != nil {
				return err
			}
			if err := want("odd alltoalls", int64(10+k), -1, -1, int64(30+k), -1, -1, int64(50+k)); err != nil {
				return err
			}
			// Broadcast from the team's PE 2, World PE 5.
			reset(int64(me))
			if err := TeamBroadcast(ctx, odd, dst, src, 1, 2); err != nil {
				return err
			}
			if err := want("odd broadcast from 2", 5); err != nil {
				return err
			}
		}

		// The World forms are the same collectives over TeamWorld.
		reset(int64(me))
		if err := TeamSumReduce(ctx, w.TeamWorld(), dst, src, 1); err != nil {
			return err
		}
		if err := want("world sum", 15); err != nil {
			return err
		}
		if err := SumReduce(ctx, w, dst.Slice(1, 2), src, 1); err != nil {
			return err
		}
		if err := want("world sum (World form)", 15, 15); err != nil {
			return err
		}
		return nil
	})
}

// Team.Barrier completes puts made before it, on the team's PEs; Sync
// only meets.
func TestTeamBarrierSync(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me := w.MyPE()
		_, col, err := w.TeamWorld().Split2D(ctx, 2) // columns {0,2} {1,3}
		if err != nil {
			return err
		}
		box := alloc[int64](ctx, w, 1)
		other := TranslatePE(col, 1-col.MyPE(), w.TeamWorld())
		for round := int64(1); round <= 3; round++ {
			if err := PutNBI(w, box, []int64{round*10 + int64(me)}, other); err != nil {
				return err
			}
			if err := col.Barrier(ctx); err != nil {
				return err
			}
			if got := box.Local(w)[0]; got != round*10+int64(other) {
				return fmt.Errorf("round %d: PE %d has %d, want %d", round, me, got, round*10+int64(other))
			}
			if err := col.Sync(ctx); err != nil { // nobody puts again before all have read
				return err
			}
		}
		return nil
	})
}

// Bad arguments to the team calls: errors wrapping the right sentinel on
// every PE, no panic, and the team calls work afterwards.
func TestTeamErrors(t *testing.T) {
	run(t, 4, func(ctx context.Context, w *World) error {
		me := w.MyPE()
		world := w.TeamWorld()
		split := func(start, stride, size int) error {
			team, err := world.SplitStrided(ctx, start, stride, size)
			if team != nil {
				return fmt.Errorf("SplitStrided(%d, %d, %d) gave a team with error %v", start, stride, size, err)
			}
			return err
		}
		split2D := func(xrange int) error {
			x, y, err := world.Split2D(ctx, xrange)
			if x != nil || y != nil {
				return fmt.Errorf("Split2D(%d) gave teams with error %v", xrange, err)
			}
			return err
		}
		var nilTeam *Team
		dead, err := world.SplitStrided(ctx, 0, 1, 4)
		must(err)
		deadCtx, err := dead.CreateCtx(0)
		must(err)
		must(dead.Destroy(ctx))
		x := alloc[int64](ctx, w, 4)
		checks := []struct {
			what   string
			err    error
			target error
		}{
			{"SplitStrided of size 0", split(0, 1, 0), narma.ErrInvalid},
			{"SplitStrided larger than the team", split(0, 1, 5), narma.ErrInvalid},
			{"SplitStrided from -1", split(-1, 1, 2), narma.ErrInvalid},
			{"SplitStrided from 4", split(4, 1, 1), narma.ErrInvalid},
			{"SplitStrided with stride 0 and size 2", split(0, 0, 2), narma.ErrInvalid},
			{"SplitStrided past the end", split(1, 2, 3), narma.ErrInvalid},
			{"SplitStrided past the start", split(1, -2, 2), narma.ErrInvalid},
			{"SplitStrided with a huge stride", split(0, 1<<62, 2), narma.ErrInvalid},
			{"SplitStrided with different starts", split(me%2, 2, 2), narma.ErrCollective},
			{"SplitStrided with different sizes", split(0, 1, 1+me%2), ErrNotSymmetric},
			{"Split2D with xrange 0", split2D(0), narma.ErrInvalid},
			{"Split2D with different xranges", split2D(1 + me%2), narma.ErrCollective},
			{"SplitStrided of a nil team", func() error { _, err := nilTeam.SplitStrided(ctx, 0, 1, 1); return err }(), narma.ErrInvalid},
			{"Split2D of a nil team", func() error { _, _, err := nilTeam.Split2D(ctx, 1); return err }(), narma.ErrInvalid},
			{"Destroy of a nil team", nilTeam.Destroy(ctx), narma.ErrInvalid},
			{"Sync of a nil team", nilTeam.Sync(ctx), narma.ErrInvalid},
			{"Barrier of a nil team", nilTeam.Barrier(ctx), narma.ErrInvalid},
			{"CreateCtx of a nil team", func() error { _, err := nilTeam.CreateCtx(0); return err }(), narma.ErrInvalid},
			{"TeamBroadcast over a nil team", TeamBroadcast(ctx, nilTeam, x, x, 1, 0), narma.ErrInvalid},
			{"TeamSumReduce over a nil team", TeamSumReduce(ctx, nilTeam, x, x, 1), narma.ErrInvalid},
			{"TeamCollect over a nil team", TeamCollect(ctx, nilTeam, x, x, 1), narma.ErrInvalid},
			{"SplitStrided of a destroyed team", func() error { _, err := dead.SplitStrided(ctx, 0, 1, 1); return err }(), narma.ErrFreed},
			{"Destroy of a destroyed team", dead.Destroy(ctx), narma.ErrFreed},
			{"Sync of a destroyed team", dead.Sync(ctx), narma.ErrFreed},
			{"CreateCtx of a destroyed team", func() error { _, err := dead.CreateCtx(0); return err }(), narma.ErrFreed},
			{"TeamFcollect over a destroyed team", TeamFcollect(ctx, dead, x, x, 1), narma.ErrFreed},
			{"TeamAlltoall over a destroyed team", TeamAlltoall(ctx, dead, x, x, 1), narma.ErrFreed},
			{"CtxPut on a context of a destroyed team", CtxPut(ctx, deadCtx, x, []int64{1}, 0), narma.ErrFreed},
			{"Destroy of TeamWorld", world.Destroy(ctx), narma.ErrInvalid},
			{"Destroy of TeamShared", w.TeamShared().Destroy(ctx), narma.ErrInvalid},
			{"TeamBroadcast from root 4 of 4", TeamBroadcast(ctx, world, x, x, 1, 4), narma.ErrRank},
			{"Broadcast from root -1", Broadcast(ctx, w, x, x, 1, -1), narma.ErrRank},
			{"TeamBroadcast from narma.ProcNull", TeamBroadcast(ctx, world, x, x, 1, narma.ProcNull), narma.ErrRank},
		}
		for _, c := range checks {
			if err := wantErr(c.what, c.err, c.target); err != nil {
				return err
			}
		}
		if nilTeam.MyPE() != -1 || nilTeam.NPEs() != 0 || nilTeam.World() != nil || TranslatePE(nilTeam, 0, world) != -1 || TranslatePE(world, 0, nilTeam) != -1 {
			return errors.New("accessors of a nil team")
		}
		// Nothing was written, and the teams still split.
		for i, v := range x.Local(w) {
			if v != 0 {
				return fmt.Errorf("x[%d] = %d after refused calls", i, v)
			}
		}
		team, err := world.SplitStrided(ctx, 1, 2, 2)
		if err != nil {
			return err
		}
		return checkTeam(w, "split after errors", team, []int{1, 3})
	})
}

// Calls on the teams of a finalized World fail with ErrFinalized.
func TestTeamFinalized(t *testing.T) {
	runComm(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		w, err := Init(ctx, c, WithHeapSize(1024))
		if err != nil {
			return err
		}
		world := w.TeamWorld()
		team, err := world.SplitStrided(ctx, 0, 1, 2)
		if err != nil {
			return err
		}
		cx, err := team.CreateCtx(CtxPrivate)
		if err != nil {
			return err
		}
		x := alloc[int64](ctx, w, 1)
		if err := w.Finalize(ctx); err != nil {
			return err
		}
		if w.TeamWorld() != nil || w.TeamShared() != nil {
			return errors.New("a finalized World still has teams")
		}
		for i, err := range []error{
			func() error { _, err := team.SplitStrided(ctx, 0, 1, 1); return err }(),
			func() error { _, _, err := world.Split2D(ctx, 1); return err }(),
			team.Sync(ctx), team.Barrier(ctx), team.Destroy(ctx), w.SyncAll(ctx),
			func() error { _, err := team.CreateCtx(0); return err }(),
			func() error { _, err := w.CtxCreate(0); return err }(),
			TeamSumReduce(ctx, team, x, x, 1), TeamBroadcast(ctx, world, x, x, 1, 0),
			cx.Quiet(ctx), cx.Fence(ctx), cx.Destroy(ctx),
			CtxPut(ctx, cx, x, []int64{1}, 0), CtxPutNBI(cx, x, []int64{1}, 0),
			CtxAtomicAdd(ctx, cx, x, 1, 0),
		} {
			if !errors.Is(err, ErrFinalized) {
				return fmt.Errorf("call %d after Finalize: %v, want ErrFinalized", i, err)
			}
		}
		return nil
	})
}
