package coarray

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// teamOrder returns the initial images of a team, in team order.
func teamOrder(t *Team) []int {
	out := make([]int, t.NumImages())
	for i := range out {
		out[i] = t.initialImage(i)
	}
	return out
}

// TestFormTeamOddEven forms a team of the even and one of the odd images
// of five, and checks what each image sees of its team outside and
// inside ChangeTeam, and that everything is back afterwards.
func TestFormTeamOddEven(t *testing.T) {
	runImages(t, 5, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		initial, err := im.GetTeam(InitialTeam)
		if err != nil {
			return err
		}
		if cur, err := im.GetTeam(CurrentTeam); err != nil || cur != initial {
			t.Errorf("current team %v (%v), want the initial team", cur, err)
		}
		if im.TeamNumber() != -1 || initial.Number() != -1 || initial.NumImages() != 5 || initial.ThisImage() != me || initial.String() != "the initial team" {
			t.Errorf("initial team: number %d/%d, %d images, image %d, %q", im.TeamNumber(), initial.Number(), initial.NumImages(), initial.ThisImage(), initial)
		}
		_, err = im.GetTeam(ParentTeam)
		wantErr(t, "GetTeam(ParentTeam) in the initial team", err, ErrTeam)

		number := 1 + me%2
		team, err := im.FormTeam(ctx, number)
		if err != nil {
			return err
		}
		size := []int{3, 2}[me%2]
		want := [][]int{{0, 2, 4}, {1, 3}}[me%2]
		if team.Number() != number || team.NumImages() != size || team.ThisImage() != me/2 || team.String() != fmt.Sprintf("team %d", number) {
			t.Errorf("image %d: team %d of %d images, image %d (%q)", me, team.Number(), team.NumImages(), team.ThisImage(), team)
		}
		if got := teamOrder(team); !slices.Equal(got, want) {
			t.Errorf("image %d: team of images %v, want %v", me, got, want)
		}
		// Forming a team changes nothing yet.
		if im.TeamNumber() != -1 || im.ThisImage() != me || im.NumImages() != 5 {
			t.Errorf("after FormTeam: team %d, image %d of %d", im.TeamNumber(), im.ThisImage(), im.NumImages())
		}
		ran := false
		err = im.ChangeTeam(ctx, team, func() error {
			ran = true
			if im.TeamNumber() != number || im.ThisImage() != me/2 || im.NumImages() != size {
				t.Errorf("image %d in team %d: team %d, image %d of %d", me, number, im.TeamNumber(), im.ThisImage(), im.NumImages())
			}
			cur, err1 := im.GetTeam(CurrentTeam)
			parent, err2 := im.GetTeam(ParentTeam)
			init, err3 := im.GetTeam(InitialTeam)
			if cur != team || parent != initial || init != initial || errors.Join(err1, err2, err3) != nil {
				t.Errorf("GetTeam in team %d: %v %v %v (%v)", number, cur, parent, init, errors.Join(err1, err2, err3))
			}
			// Who is in the team, by a sum over it of the initial numbers.
			v := make([]int64, 5)
			v[me] = 1
			if err := CoSum(ctx, im, v); err != nil {
				return err
			}
			for r, x := range v {
				if (x == 1) != (r%2 == me%2) || x > 1 {
					t.Errorf("image %d: CoSum over team %d counts initial image %d %d times", me, number, r, x)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !ran {
			t.Errorf("ChangeTeam did not run its block")
		}
		if im.TeamNumber() != -1 || im.ThisImage() != me || im.NumImages() != 5 {
			t.Errorf("after ChangeTeam: team %d, image %d of %d", im.TeamNumber(), im.ThisImage(), im.NumImages())
		}
		// The team can be changed into again.
		return im.ChangeTeam(ctx, team, func() error { return im.SyncAll(ctx) })
	})
}

// TestNewIndex reorders the images of a team with NEW_INDEX, in full and
// in part (the images without an index fill the free ones in order), and
// checks that CoReduce, SyncImages and puts follow the new numbers.
func TestNewIndex(t *testing.T) {
	const n = 5
	runImages(t, n, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		a, err := New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		rev, err := im.FormTeam(ctx, 7, NewIndex(n-1-me))
		if err != nil {
			return err
		}
		if rev.ThisImage() != n-1-me || !slices.Equal(teamOrder(rev), []int{4, 3, 2, 1, 0}) {
			t.Errorf("image %d: reversed team: image %d, order %v", me, rev.ThisImage(), teamOrder(rev))
		}
		var opts []TeamOption
		switch me {
		case 3:
			opts = append(opts, NewIndex(0))
		case 1:
			opts = append(opts, NewIndex(4))
		}
		mix, err := im.FormTeam(ctx, 1, opts...)
		if err != nil {
			return err
		}
		order := []int{3, 0, 2, 4, 1}
		if mix.ThisImage() != slices.Index(order, me) || !slices.Equal(teamOrder(mix), order) {
			t.Errorf("image %d: mixed team: image %d, order %v, want %v", me, mix.ThisImage(), teamOrder(mix), order)
		}

		for _, c := range []struct {
			team  *Team
			order []int
		}{{rev, []int{4, 3, 2, 1, 0}}, {mix, order}} {
			err := im.ChangeTeam(ctx, c.team, func() error {
				ti := im.ThisImage()
				// CO_REDUCE in team order: the initial numbers as digits.
				x := []int64{int64(me)}
				if err := CoReduce(ctx, im, x, func(a, b int64) int64 { return 10*a + b }); err != nil {
					return err
				}
				want := int64(0)
				for _, r := range c.order {
					want = 10*want + int64(r)
				}
				if x[0] != want {
					t.Errorf("image %d (team image %d): CoReduce %d, want %d", me, ti, x[0], want)
				}
				// Each team image puts its initial number into the next
				// team image's block.
				right, left := (ti+1)%n, (ti+n-1)%n
				if err := a.Put(right, 0, []int64{int64(me)}); err != nil {
					return err
				}
				if err := im.SyncImages(ctx, []int{left, right}); err != nil {
					return err
				}
				if got := a.Local()[0]; got != int64(c.order[left]) {
					t.Errorf("image %d (team image %d): got %d from team image %d, want initial image %d", me, ti, got, left, c.order[left])
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return a.Free(ctx)
	})
}

// TestTeamCollectives runs every collective inside teams of different
// sizes (the even and the odd images of seven) and checks the results by
// hand, with team numbers for ResultImage and the broadcast's source.
func TestTeamCollectives(t *testing.T) {
	runImages(t, 7, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		odd := me % 2
		team, err := im.FormTeam(ctx, 1+odd)
		if err != nil {
			return err
		}
		err = im.ChangeTeam(ctx, team, func() error {
			ti, n := im.ThisImage(), im.NumImages()
			if n != 4-odd || ti != me/2 {
				t.Errorf("image %d: team image %d of %d", me, ti, n)
			}
			sum := []int64{int64(me), 1}
			if err := CoSum(ctx, im, sum); err != nil {
				return err
			}
			if want := [][]int64{{12, 4}, {9, 3}}[odd]; !slices.Equal(sum, want) {
				t.Errorf("image %d: CoSum %v, want %v", me, sum, want)
			}
			lo, hi := []float64{float64(me)}, []int32{int32(me)}
			if err := CoMin(ctx, im, lo); err != nil {
				return err
			}
			if err := CoMax(ctx, im, hi); err != nil {
				return err
			}
			if lo[0] != float64(odd) || hi[0] != int32(6-odd) {
				t.Errorf("image %d: CoMin %v, CoMax %v", me, lo, hi)
			}
			one := []int64{int64(me)}
			if err := CoMax(ctx, im, one, ResultImage(1)); err != nil {
				return err
			}
			if want := map[bool]int64{true: int64(6 - odd), false: int64(me)}[ti == 1]; one[0] != want {
				t.Errorf("image %d: CoMax to team image 1: %d, want %d", me, one[0], want)
			}
			b := []int64{int64(me)}
			if err := CoBroadcast(ctx, im, b, 2); err != nil {
				return err
			}
			if b[0] != int64(4+odd) {
				t.Errorf("image %d: CoBroadcast from team image 2: %d, want %d", me, b[0], 4+odd)
			}
			r := []int64{int64(me)}
			if err := CoReduce(ctx, im, r, func(x, y int64) int64 { return 10*x + y }); err != nil {
				return err
			}
			if want := []int64{246, 135}[odd]; r[0] != want {
				t.Errorf("image %d: CoReduce %d, want %d", me, r[0], want)
			}
			r[0] = int64(me)
			if err := CoReduce(ctx, im, r, func(x, y int64) int64 { return 10*x + y }, ResultImage(0)); err != nil {
				return err
			}
			if want := map[bool]int64{true: []int64{246, 135}[odd], false: int64(me)}[ti == 0]; r[0] != want {
				t.Errorf("image %d: CoReduce to team image 0: %d, want %d", me, r[0], want)
			}
			// Team numbers are checked against the team.
			wantErr(t, "CoSum with ResultImage outside the team", CoSum(ctx, im, sum, ResultImage(n)), narma.ErrRank)
			wantErr(t, "SyncImages outside the team", im.SyncImages(ctx, []int{n}), narma.ErrRank)
			_, err := im.ImageStatus(n)
			wantErr(t, "ImageStatus outside the team", err, narma.ErrRank)
			if st, err := im.ImageStatus(n - 1); err != nil || st != ImageRunning {
				t.Errorf("ImageStatus(%d): %v %v", n-1, st, err)
			}
			if f := im.FailedImages(); len(f) != 0 {
				t.Errorf("FailedImages: %v", f)
			}
			return im.SyncAll(ctx)
		})
		if err != nil {
			return err
		}
		// And over every image again.
		sum := []int64{int64(me)}
		if err := CoSum(ctx, im, sum); err != nil {
			return err
		}
		if sum[0] != 21 {
			t.Errorf("CoSum over the initial team after ChangeTeam: %d", sum[0])
		}
		return nil
	})
}

// TestTeamCoindexed: inside a team whose images are numbered in reverse,
// puts, gets and atomics by team number land on the right images of the
// initial team; TEAM= and TEAM_NUMBER= selectors reach the initial team
// and the sibling team; a team number outside the team writes nothing.
func TestTeamCoindexed(t *testing.T) {
	runImages(t, 6, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		odd := me % 2
		a, err := New[int64](ctx, im, 4)
		if err != nil {
			return err
		}
		cnt, err := New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		a.Local()[3] = int64(1000 + me)
		team, err := im.FormTeam(ctx, 1+odd, NewIndex(2-me/2))
		if err != nil {
			return err
		}
		initial, err := im.GetTeam(InitialTeam)
		if err != nil {
			return err
		}
		orders := [][]int{{4, 2, 0}, {5, 3, 1}}
		order := orders[odd]
		if !slices.Equal(teamOrder(team), order) {
			t.Fatalf("image %d: team order %v, want %v", me, teamOrder(team), order)
		}
		wantErr(t, "TEAM= of a team not yet changed into", a.In(team).Put(0, 0, []int64{1}), ErrTeam)
		wantErr(t, "TEAM_NUMBER= of a sibling in the initial team", a.InTeamNumber(1).Put(0, 0, []int64{1}), ErrTeam)
		err = im.ChangeTeam(ctx, team, func() error {
			ti, n := im.ThisImage(), im.NumImages()
			right := (ti + 1) % n
			if err := a.Put(right, 0, []int64{int64(100 + me)}); err != nil {
				return err
			}
			// The entry of ChangeTeam synchronized the team: the stores
			// to element 3 before it are visible.
			for j := range n {
				x := make([]int64, 1)
				if err := a.Get(j, 3, x); err != nil {
					return err
				}
				if x[0] != int64(1000+order[j]) {
					t.Errorf("image %d: Get from team image %d: %d, want %d", me, j, x[0], 1000+order[j])
				}
				if err := a.InTeamNumber(team.Number()).Get(j, 3, x); err != nil || x[0] != int64(1000+order[j]) {
					t.Errorf("image %d: Get from team image %d by its team number: %d (%v)", me, j, x[0], err)
				}
			}
			if _, err := AtomicFetchAdd(cnt, 0, 0, 1); err != nil {
				return err
			}
			// TEAM=initial and TEAM_NUMBER=-1 number images as outside.
			if err := a.In(initial).Put((me+1)%6, 1, []int64{int64(me)}); err != nil {
				return err
			}
			x := make([]int64, 1)
			if err := a.InTeamNumber(-1).Get((me+3)%6, 3, x); err != nil || x[0] != int64(1000+(me+3)%6) {
				t.Errorf("image %d: Get with TEAM_NUMBER=-1: %d (%v)", me, x[0], err)
			}
			// TEAM_NUMBER= of the sibling team: its own numbering.
			sib := orders[1-odd]
			for j := range sib {
				if err := a.InTeamNumber(2-odd).Get(j, 3, x); err != nil || x[0] != int64(1000+sib[j]) {
					t.Errorf("image %d: Get from image %d of sibling team %d: %d (%v)", me, j, 2-odd, x[0], err)
				}
			}
			// Bad selectors and numbers write nothing.
			wantErr(t, "Put to a team image past the end", a.Put(n, 2, []int64{99}), narma.ErrRank)
			wantErr(t, "Put to team image -1", a.Put(-1, 2, []int64{99}), narma.ErrRank)
			wantErr(t, "Put to a sibling image past the end", a.InTeamNumber(2-odd).Put(len(sib), 2, []int64{99}), narma.ErrRank)
			wantErr(t, "AtomicAdd past the end", AtomicAdd(cnt, n, 0, 99), narma.ErrRank)
			wantErr(t, "TEAM_NUMBER= of no team", a.InTeamNumber(9).Put(0, 2, []int64{99}), ErrTeam)
			wantErr(t, "TEAM_NUMBER=0", a.InTeamNumber(0).Put(0, 2, []int64{99}), narma.ErrInvalid)
			wantErr(t, "TEAM_NUMBER=-2", a.InTeamNumber(-2).Get(0, 2, x), narma.ErrInvalid)
			wantErr(t, "TEAM=nil", a.In(nil).Get(0, 2, x), narma.ErrInvalid)
			return nil
		})
		if err != nil {
			return err
		}
		// END TEAM synchronized the team: the puts of its images are here.
		ti := team.ThisImage()
		from := order[(ti+2)%3]
		if got := a.Local()[0]; got != int64(100+from) {
			t.Errorf("image %d: element 0 is %d, want %d from initial image %d", me, got, 100+from, from)
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if got := a.Local()[1]; got != int64((me+5)%6) {
			t.Errorf("image %d: element 1 (TEAM=initial) is %d, want %d", me, got, (me+5)%6)
		}
		if got := a.Local()[2]; got != 0 {
			t.Errorf("image %d: element 2 is %d: a refused put wrote", me, got)
		}
		want := int64(0)
		if me == order[0] {
			want = 3
		}
		if got := cnt.Local()[0]; got != want {
			t.Errorf("image %d: counter %d, want %d", me, got, want)
		}
		if err := cnt.Free(ctx); err != nil {
			return err
		}
		return a.Free(ctx)
	})
}

// TestTeamEvents: events posted, notified puts, locks and a critical
// construct made before a team change, used inside it with team numbers.
func TestTeamEvents(t *testing.T) {
	runImages(t, 6, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		odd := me % 2
		a, err := New[int64](ctx, im, 8)
		if err != nil {
			return err
		}
		total, err := New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		ev, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		nv, err := NewNotify(ctx, im)
		if err != nil {
			return err
		}
		l, err := NewLock(ctx, im)
		if err != nil {
			return err
		}
		crit, err := NewCritical(ctx, im)
		if err != nil {
			return err
		}
		team, err := im.FormTeam(ctx, 1+odd, NewIndex(2-me/2))
		if err != nil {
			return err
		}
		order := [][]int{{4, 2, 0}, {5, 3, 1}}[odd]
		initial, err := im.GetTeam(InitialTeam)
		if err != nil {
			return err
		}
		err = im.ChangeTeam(ctx, team, func() error {
			ti, n := im.ThisImage(), im.NumImages()
			// Producers and a consumer: data, then EVENT POST to team image 0.
			if ti != 0 {
				if err := a.Put(0, ti, []int64{int64(me)}); err != nil {
					return err
				}
				if err := ev.Post(0); err != nil {
					return err
				}
			} else {
				if err := ev.Wait(ctx, n-1); err != nil {
					return err
				}
				for i := 1; i < n; i++ {
					if got := a.Local()[i]; got != int64(order[i]) {
						t.Errorf("image %d: element %d after the event is %d, want %d", me, i, got, order[i])
					}
				}
				if k, err := ev.Query(); err != nil || k != 0 {
					t.Errorf("EVENT_QUERY after the wait: %d (%v)", k, err)
				}
			}
			wantErr(t, "Post past the end of the team", ev.Post(n), narma.ErrRank)
			// A notified put to the next team image.
			if err := a.Put((ti+1)%n, 6, []int64{int64(me)}, WithNotify(nv)); err != nil {
				return err
			}
			if err := nv.Wait(ctx, 1); err != nil {
				return err
			}
			if got, want := a.Local()[6], int64(order[(ti+n-1)%n]); got != want {
				t.Errorf("image %d: notified put brought %d, want %d", me, got, want)
			}
			// A lock on team image 0 guards a counter there.
			if err := l.Lock(ctx, 0); err != nil {
				return err
			}
			x := make([]int64, 1)
			if err := a.Get(0, 7, x); err != nil {
				return err
			}
			x[0]++
			if err := a.Put(0, 7, x); err != nil {
				return err
			}
			if err := l.Unlock(ctx, 0); err != nil {
				return err
			}
			wantErr(t, "Unlock of a free lock", l.Unlock(ctx, 0), narma.ErrInvalid)
			// The critical construct excludes every image of the job,
			// whatever the team: a counter on initial image 0.
			return crit.Do(ctx, func() error {
				y := make([]int64, 1)
				if err := total.In(initial).Get(0, 0, y); err != nil {
					return err
				}
				y[0]++
				return total.In(initial).Put(0, 0, y)
			})
		})
		if err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		want := int64(0)
		if me == order[0] {
			want = 3
		}
		if got := a.Local()[7]; got != want {
			t.Errorf("image %d: counter under the team's lock is %d, want %d", me, got, want)
		}
		if me == 0 && total.Local()[0] != 6 {
			t.Errorf("counter under the critical construct is %d, want 6", total.Local()[0])
		}
		for _, f := range []func(context.Context) error{crit.Free, l.Free, nv.Free, ev.Free, total.Free, a.Free} {
			if err := f(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestNestedTeams forms teams of two inside teams of four (numbered in
// reverse inside), and checks numbers, GetTeam, collectives, puts with
// TEAM= of the parent and TEAM_NUMBER= of a sibling at each level.
func TestNestedTeams(t *testing.T) {
	runImages(t, 8, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		odd := me % 2
		a, err := New[int64](ctx, im, 4)
		if err != nil {
			return err
		}
		a.Local()[3] = int64(1000 + me)
		initial, err := im.GetTeam(InitialTeam)
		if err != nil {
			return err
		}
		outer, err := im.FormTeam(ctx, 1+odd)
		if err != nil {
			return err
		}
		var partner int
		err = im.ChangeTeam(ctx, outer, func() error {
			ti := im.ThisImage() // me/2
			inner, err := im.FormTeam(ctx, 1+ti/2, NewIndex(1-ti%2))
			if err != nil {
				return err
			}
			// Inner team k of outer team o holds outer images 2k-1 and
			// 2k-2, in that order: initial images 2(2k-1)+o, 2(2k-2)+o.
			innerOrder := func(k int) []int { return []int{2*(2*k-1) + odd, 2*(2*k-2) + odd} }
			mine := innerOrder(1 + ti/2)
			if !slices.Equal(teamOrder(inner), mine) || inner.ThisImage() != 1-ti%2 {
				t.Errorf("image %d: inner team %v, image %d, want %v", me, teamOrder(inner), inner.ThisImage(), mine)
			}
			partner = mine[ti%2]
			err = im.ChangeTeam(ctx, inner, func() error {
				if im.TeamNumber() != 1+ti/2 || im.NumImages() != 2 || im.ThisImage() != 1-ti%2 {
					t.Errorf("image %d inner: team %d, image %d of %d", me, im.TeamNumber(), im.ThisImage(), im.NumImages())
				}
				parent, err1 := im.GetTeam(ParentTeam)
				init, err2 := im.GetTeam(InitialTeam)
				if parent != outer || init != initial || errors.Join(err1, err2) != nil {
					t.Errorf("image %d inner: parent %v, initial %v (%v)", me, parent, init, errors.Join(err1, err2))
				}
				s := []int64{int64(me)}
				if err := CoSum(ctx, im, s); err != nil {
					return err
				}
				if s[0] != int64(mine[0]+mine[1]) {
					t.Errorf("image %d inner: CoSum %d, want %d", me, s[0], mine[0]+mine[1])
				}
				if err := a.Put(1-im.ThisImage(), 0, []int64{int64(me)}); err != nil {
					return err
				}
				// TEAM= the parent: outer numbers.
				if err := a.In(outer).Put((ti+1)%4, 1, []int64{int64(me)}); err != nil {
					return err
				}
				// TEAM_NUMBER= the sibling inner team.
				sib := innerOrder(2 - ti/2)
				x := make([]int64, 1)
				for j := range sib {
					if err := a.InTeamNumber(2-ti/2).Get(j, 3, x); err != nil || x[0] != int64(1000+sib[j]) {
						t.Errorf("image %d inner: image %d of the sibling: %d (%v)", me, j, x[0], err)
					}
				}
				// Only the inner teams 1 and 2 are siblings here.
				wantErr(t, "TEAM_NUMBER= of no sibling", a.InTeamNumber(3).Get(0, 3, x), ErrTeam)
				wantErr(t, "ChangeTeam into the parent", im.ChangeTeam(ctx, outer, func() error { return nil }), ErrTeam)
				wantErr(t, "ChangeTeam into the current team", im.ChangeTeam(ctx, inner, func() error { return nil }), ErrTeam)
				return nil
			})
			if err != nil {
				return err
			}
			if im.TeamNumber() != 1+odd || im.ThisImage() != ti || im.NumImages() != 4 {
				t.Errorf("image %d after the inner team: team %d, image %d of %d", me, im.TeamNumber(), im.ThisImage(), im.NumImages())
			}
			if err := im.SyncAll(ctx); err != nil {
				return err
			}
			if got, want := a.Local()[1], int64(2*((ti+3)%4)+odd); got != want {
				t.Errorf("image %d: TEAM=parent put brought %d, want %d", me, got, want)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if got := a.Local()[0]; got != int64(partner) {
			t.Errorf("image %d: inner put brought %d, want %d", me, got, partner)
		}
		if im.TeamNumber() != -1 || im.ThisImage() != me || im.NumImages() != 8 {
			t.Errorf("image %d after the teams: team %d, image %d of %d", me, im.TeamNumber(), im.ThisImage(), im.NumImages())
		}
		return a.Free(ctx)
	})
}

// TestTeamErrors: bad team numbers and NEW_INDEX values fail on the image
// that passed them and with ErrCollective on the others, forming no team;
// ChangeTeam refuses teams the current team did not form; allocation,
// freeing and Finalize are refused inside a team; an error or a panic in
// the block still leaves the team.
func TestTeamErrors(t *testing.T) {
	runImages(t, 4, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		bad := func(what string, number int, badImages []int, target error, opts ...TeamOption) {
			t.Helper()
			team, err := im.FormTeam(ctx, number, opts...)
			if team != nil {
				t.Errorf("%s: image %d got a team", what, me)
			}
			if slices.Contains(badImages, me) {
				wantErr(t, what, err, target)
			} else {
				wantErr(t, what+" (another image)", err, narma.ErrCollective)
			}
		}
		number := 1
		if me == 1 {
			number = 0
		}
		bad("team number 0", number, []int{1}, narma.ErrInvalid)
		bad("team number -1", -1, []int{0, 1, 2, 3}, narma.ErrInvalid)
		var opt []TeamOption
		if me == 2 {
			opt = append(opt, NewIndex(4))
		}
		bad("NewIndex past the team", 1, []int{2}, narma.ErrRank, opt...)
		opt = nil
		if me == 0 {
			opt = append(opt, NewIndex(-1))
		}
		bad("NewIndex(-1)", 1, []int{0}, narma.ErrRank, opt...)
		opt = nil
		if me == 0 || me == 3 {
			opt = append(opt, NewIndex(1))
		}
		bad("NewIndex twice", 1, []int{0, 3}, narma.ErrInvalid, opt...)
		// One index per team: the same index in two teams is fine, and
		// so is a team of one.
		opt = nil
		if me < 2 {
			opt = append(opt, NewIndex(0))
		}
		team, err := im.FormTeam(ctx, 1+me%2, opt...)
		if err != nil {
			return err
		}
		if want := []int{0, 0, 1, 1}[me]; team.ThisImage() != want {
			t.Errorf("image %d: team image %d, want %d", me, team.ThisImage(), want)
		}
		solo, err := im.FormTeam(ctx, 10+me)
		if err != nil {
			return err
		}
		if err := im.ChangeTeam(ctx, solo, func() error {
			if im.NumImages() != 1 || im.ThisImage() != 0 || im.TeamNumber() != 10+me {
				t.Errorf("team of one: image %d of %d, team %d", im.ThisImage(), im.NumImages(), im.TeamNumber())
			}
			return CoSum(ctx, im, []int64{1})
		}); err != nil {
			return err
		}
		if im.TeamNumber() != -1 {
			t.Errorf("failed FormTeams changed the current team to %d", im.TeamNumber())
		}

		a, err := New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		e, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		initial, err := im.GetTeam(InitialTeam)
		if err != nil {
			return err
		}
		noop := func() error { return nil }
		wantErr(t, "ChangeTeam(nil)", im.ChangeTeam(ctx, nil, noop), narma.ErrInvalid)
		wantErr(t, "ChangeTeam with a nil block", im.ChangeTeam(ctx, team, nil), narma.ErrInvalid)
		wantErr(t, "ChangeTeam into the initial team", im.ChangeTeam(ctx, initial, noop), ErrTeam)
		_, err = im.GetTeam(TeamLevel(9))
		wantErr(t, "GetTeam(9)", err, narma.ErrInvalid)
		// A team of another Images of this image.
		im2, err := Init(ctx, im.Comm(), WithHeapSize(64))
		if err != nil {
			return err
		}
		other, err := im2.FormTeam(ctx, 1)
		if err != nil {
			return err
		}
		wantErr(t, "ChangeTeam into another Images' team", im.ChangeTeam(ctx, other, noop), ErrTeam)
		if err := im2.Finalize(ctx); err != nil {
			return err
		}

		err = im.ChangeTeam(ctx, team, func() error {
			_, err := New[int64](ctx, im, 1)
			wantErr(t, "New inside a team", err, ErrTeam)
			_, err = NewEvent(ctx, im)
			wantErr(t, "NewEvent inside a team", err, ErrTeam)
			_, err = NewNotify(ctx, im)
			wantErr(t, "NewNotify inside a team", err, ErrTeam)
			_, err = NewLock(ctx, im)
			wantErr(t, "NewLock inside a team", err, ErrTeam)
			wantErr(t, "Array.Free inside a team", a.Free(ctx), ErrTeam)
			wantErr(t, "Event.Free inside a team", e.Free(ctx), ErrTeam)
			wantErr(t, "Attach inside a team", Attach(ctx, e, a, 0, 1), ErrTeam)
			wantErr(t, "Finalize inside a team", im.Finalize(ctx), ErrTeam)
			_, err = im.FormTeam(ctx, 0)
			wantErr(t, "FormTeam(0) inside a team", err, narma.ErrInvalid)
			// The objects are still there.
			return a.Put(1-im.ThisImage(), 0, []int64{int64(me)})
		})
		if err != nil {
			return err
		}
		// An error of the block on one image: returned there, and the
		// team is left on every image.
		errBlock := errors.New("block failed")
		err = im.ChangeTeam(ctx, team, func() error {
			if me == 2 {
				return errBlock
			}
			return nil
		})
		if (me == 2) != errors.Is(err, errBlock) || (me != 2 && err != nil) {
			t.Errorf("image %d: ChangeTeam with a failing block: %v", me, err)
		}
		// A panic in the block leaves the team too.
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("recovered %v", p)
				}
			}()
			_ = im.ChangeTeam(ctx, team, func() error { panic("boom") })
		}()
		if im.TeamNumber() != -1 || im.NumImages() != 4 {
			t.Errorf("image %d: after the failed blocks: team %d of %d images", me, im.TeamNumber(), im.NumImages())
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		// The teams are images 0 and 2, and 1 and 3: each put into the other.
		if got := a.Local()[0]; got != int64(me^2) {
			t.Errorf("image %d: put inside the team brought %d, want %d", me, got, me^2)
		}
		if err := e.Free(ctx); err != nil {
			return err
		}
		return a.Free(ctx)
	})
}

// TestTeamNil: calls on nil handles return errors, never panic.
func TestTeamNil(t *testing.T) {
	var im *Images
	var team *Team
	if team.Number() != 0 || team.NumImages() != 0 || team.ThisImage() != -1 || team.String() != "no team" {
		t.Errorf("nil Team: %d %d %d %q", team.Number(), team.NumImages(), team.ThisImage(), team)
	}
	if im.TeamNumber() != -1 {
		t.Errorf("nil Images: TeamNumber %d", im.TeamNumber())
	}
	_, err := im.FormTeam(context.Background(), 1)
	wantErr(t, "FormTeam on nil", err, narma.ErrInvalid)
	wantErr(t, "ChangeTeam on nil", im.ChangeTeam(context.Background(), nil, func() error { return nil }), narma.ErrInvalid)
	_, err = im.GetTeam(CurrentTeam)
	wantErr(t, "GetTeam on nil", err, narma.ErrInvalid)
	var a *Array[int64]
	if a.In(nil) != nil || a.InTeamNumber(1) != nil {
		t.Errorf("views of a nil Array are not nil")
	}
	wantErr(t, "Put through a view of a nil Array", a.In(nil).Put(0, 0, nil), narma.ErrInvalid)
}
