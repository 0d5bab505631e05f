package narma_test

import (
	"fmt"

	"github.com/narma-rma/narma"
)

// A node-local array in a shared window: the ranks of each host store
// their values straight into the memory of their host's first rank, which
// sums them and sends the host's total to rank 0 of the job with a
// notified put between the hosts' first ranks. Run by narmarun on a
// hybrid job of several hosts, the same code keeps the loads and stores
// within each host and the notified puts between them; here, on
// goroutine ranks, there is one host.
func ExampleAllocateShared() {
	err := narma.Run(4, func(c *narma.Comm) error {
		ctx := c.Context()
		node, err := c.SplitShared(ctx) // the ranks of this host
		if err != nil {
			return err
		}
		n := 0
		if node.Rank() == 0 {
			n = node.Size() // the host's first rank holds the array
		}
		w, err := narma.AllocateShared[int64](ctx, node, n)
		if err != nil {
			return err
		}
		array, err := w.SharedQuery(0)
		if err != nil {
			return err
		}
		array[node.Rank()] = int64(10 * (c.Rank() + 1)) // a plain store
		// Sync, Barrier, Sync: the stores before every rank's loads.
		if err := w.Sync(); err != nil {
			return err
		}
		if err := node.Barrier(ctx); err != nil {
			return err
		}
		if err := w.Sync(); err != nil {
			return err
		}
		// The hosts' first ranks: one total each, put with a notice.
		color := narma.Undefined
		if node.Rank() == 0 {
			color = 0
		}
		leaders, err := c.Split(ctx, color, c.Rank())
		if err != nil {
			return err
		}
		if leaders != nil {
			if err := sendTotals(leaders, array); err != nil {
				return err
			}
		}
		if err := node.Barrier(ctx); err != nil {
			return err
		}
		return w.Free(ctx)
	})
	fmt.Println(err)
	// Output:
	// total 100
	// <nil>
}

// sendTotals puts each host's total into a window of rank 0 of leaders,
// notified, and prints the sum there.
func sendTotals(leaders *narma.Comm, array []int64) error {
	ctx := leaders.Context()
	total := int64(0)
	for _, v := range array {
		total += v
	}
	totals, err := narma.Allocate[int64](ctx, leaders, leaders.Size())
	if err != nil {
		return err
	}
	var req *narma.Request
	if leaders.Rank() == 0 { // one notice from each host
		if req, err = totals.NotifyInit(narma.AnySource, 1, leaders.Size()); err != nil {
			return err
		}
		if err := req.Start(); err != nil {
			return err
		}
	}
	if err := leaders.Barrier(ctx); err != nil { // the request is posted
		return err
	}
	if err := totals.Lock(ctx, narma.Shared, 0, 0); err != nil {
		return err
	}
	if err := totals.PutNotify([]int64{total}, 0, leaders.Rank(), narma.Tag(1)); err != nil {
		return err
	}
	if err := totals.Unlock(ctx, 0); err != nil {
		return err
	}
	if req != nil {
		if _, err := req.Wait(ctx); err != nil {
			return err
		}
		sum := int64(0)
		for _, v := range totals.Local() {
			sum += v
		}
		fmt.Println("total", sum) // whatever the number of hosts
		if err := req.Free(); err != nil {
			return err
		}
	}
	return totals.Free(ctx)
}
