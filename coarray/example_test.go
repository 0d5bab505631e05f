package coarray_test

import (
	"fmt"
	"log"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/coarray"
)

// Each image puts its number into the next image's block; after SYNC ALL
// every image reads what its left neighbour sent.
func Example() {
	got := make([]int64, 4)
	err := narma.Run(4, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := coarray.Init(ctx, c)
		if err != nil {
			return err
		}
		a, err := coarray.New[int64](ctx, im, 1) // integer :: a[*]
		if err != nil {
			return err
		}
		me, right := im.ThisImage(), (im.ThisImage()+1)%im.NumImages()
		if err := a.Put(right, 0, []int64{int64(me) * 10}); err != nil { // a[right] = me*10
			return err
		}
		if err := im.SyncAll(ctx); err != nil { // sync all
			return err
		}
		got[me] = a.Local()[0]
		if err := a.Free(ctx); err != nil {
			return err
		}
		return im.Finalize(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [30 0 10 20]
}

// Producer and consumer with an event: the data put before EVENT POST is
// in place when the consumer's EVENT WAIT returns.
func ExampleEvent() {
	var got []float64
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := coarray.Init(ctx, c)
		if err != nil {
			return err
		}
		a, err := coarray.New[float64](ctx, im, 3)
		if err != nil {
			return err
		}
		ready, err := coarray.NewEvent(ctx, im)
		if err != nil {
			return err
		}
		if im.ThisImage() == 0 {
			if err := a.Put(1, 0, []float64{1.5, 2.5, 3.5}); err != nil { // a(:)[2] = ...
				return err
			}
			if err := ready.Post(1); err != nil { // event post(ready[2])
				return err
			}
		} else {
			if err := ready.Wait(ctx, 1); err != nil { // event wait(ready)
				return err
			}
			got = append(got, a.Local()...)
		}
		return im.Finalize(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [1.5 2.5 3.5]
}

// With the event attached to the array, the put itself posts it: no
// separate post, and the consumer's wait counts puts.
func ExampleAttach() {
	var got []int32
	err := narma.Run(3, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := coarray.Init(ctx, c)
		if err != nil {
			return err
		}
		a, err := coarray.New[int32](ctx, im, im.NumImages())
		if err != nil {
			return err
		}
		arrived, err := coarray.NewEvent(ctx, im)
		if err != nil {
			return err
		}
		if err := coarray.Attach(ctx, arrived, a, 0, a.Len()); err != nil { // event attach(arrived, a)
			return err
		}
		me := im.ThisImage()
		if me > 0 {
			if err := a.Put(0, me, []int32{int32(100 + me)}); err != nil { // a(me)[1] = 100+me: posts arrived[1]
				return err
			}
		} else {
			if err := arrived.Wait(ctx, im.NumImages()-1); err != nil { // both puts are in place
				return err
			}
			got = append(got, a.Local()...)
		}
		return im.Finalize(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [0 101 102]
}

// A Fortran 2023 notified put: a(1)[2, notify=nv] = 42, then on image 2
// notify wait(nv).
func ExampleWithNotify() {
	var got uint8
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := coarray.Init(ctx, c, coarray.WithHeapSize(4096))
		if err != nil {
			return err
		}
		a, err := coarray.New[uint8](ctx, im, 1)
		if err != nil {
			return err
		}
		nv, err := coarray.NewNotify(ctx, im)
		if err != nil {
			return err
		}
		if im.ThisImage() == 0 {
			if err := a.Put(1, 0, []uint8{42}, coarray.WithNotify(nv)); err != nil {
				return err
			}
		} else {
			if err := nv.Wait(ctx, 1); err != nil {
				return err
			}
			got = a.Local()[0]
		}
		return im.Finalize(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: 42
}

// SYNC IMAGES in a ring: each image synchronizes with its two neighbours
// only.
func ExampleImages_SyncImages() {
	got := make([]int16, 4)
	err := narma.Run(4, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := coarray.Init(ctx, c)
		if err != nil {
			return err
		}
		a, err := coarray.New[int16](ctx, im, 1)
		if err != nil {
			return err
		}
		me, n := im.ThisImage(), im.NumImages()
		left, right := (me+n-1)%n, (me+1)%n
		if err := a.Put(left, 0, []int16{int16(me)}); err != nil {
			return err
		}
		if err := im.SyncImages(ctx, []int{left, right}); err != nil { // sync images([left, right])
			return err
		}
		got[me] = a.Local()[0] // from the right neighbour
		return im.Finalize(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [1 2 3 0]
}

// A global sum and a shared counter: every image takes tickets from a
// counter on image 0 with ATOMIC_FETCH_ADD, and CO_SUM adds up how many
// each took.
func ExampleCoSum() {
	err := narma.Run(3, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := coarray.Init(ctx, c)
		if err != nil {
			return err
		}
		defer im.Finalize(ctx)
		counter, err := coarray.New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		taken := []int64{0}
		for range im.ThisImage() + 1 { // image i takes i+1 tickets
			if _, err := coarray.AtomicFetchAdd(counter, 0, 0, 1); err != nil {
				return err
			}
			taken[0]++
		}
		if err := coarray.CoSum(ctx, im, taken); err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		last, err := coarray.AtomicRef(counter, 0, 0)
		if err != nil {
			return err
		}
		if im.ThisImage() == 0 {
			fmt.Println("tickets taken:", taken[0], "counter:", last)
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		return counter.Free(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: tickets taken: 6 counter: 6
}

// FORM TEAM and CHANGE TEAM: the even and the odd images of four form two
// teams. Inside the block, image numbers, collectives and puts are the
// team's: each image sums the initial numbers of its team and puts the
// sum into team image 0's block, a coarray allocated before the change.
func ExampleImages_ChangeTeam() {
	lines := make([]string, 4)
	err := narma.Run(4, func(c *narma.Comm) error {
		ctx := c.Context()
		im, err := coarray.Init(ctx, c)
		if err != nil {
			return err
		}
		a, err := coarray.New[int64](ctx, im, 1)
		if err != nil {
			return err
		}
		me := im.ThisImage()
		// form team (2 - mod(this_image(), 2), team): team 1 of the
		// images 0 and 2 (Fortran's 1 and 3), team 2 of 1 and 3.
		team, err := im.FormTeam(ctx, 1+me%2)
		if err != nil {
			return err
		}
		err = im.ChangeTeam(ctx, team, func() error { // change team (team)
			sum := []int64{int64(me)}
			if err := coarray.CoSum(ctx, im, sum); err != nil { // call co_sum(sum)
				return err
			}
			lines[me] = fmt.Sprintf("image %d: team %d, image %d of %d, sum %d",
				me, im.TeamNumber(), im.ThisImage(), im.NumImages(), sum[0])
			if im.ThisImage() == 0 {
				return nil
			}
			return a.Put(0, 0, sum) // a[1] = sum: team image 0
		}) // end team: the team's images synchronize
		if err != nil {
			return err
		}
		if im.ThisImage() < 2 { // the images 0 and 1, team image 0 of each team
			lines[me] += fmt.Sprintf(", got %d", a.Local()[0])
		}
		return im.Finalize(ctx)
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// image 0: team 1, image 0 of 2, sum 2, got 2
	// image 1: team 2, image 0 of 2, sum 4, got 4
	// image 2: team 1, image 1 of 2, sum 2
	// image 3: team 2, image 1 of 2, sum 4
}
