// Package shm is the transport of ranks that are processes on one host:
// they reach each other's windows through shared mappings of files in
// /dev/shm.
//
// Every process allocates the memory it exposes from its Heap (segments
// that its peers map on first use), so a put is a copy straight into the
// target's window, a get a copy out of it, and an accumulate an atomic
// instruction (a compare-and-swap loop for floating-point operations) on
// the mapped memory. Each endpoint also has a control segment holding its
// notice ring, its table of exposed regions and one active-message byte
// ring per source rank.
//
// Notices travel through the target's ring, a bounded multi-producer queue
// of cache-line slots drained by the target in Poll (or by the endpoint's
// progress goroutine when nobody polls). A full ring makes producers wait;
// nothing is dropped. A notified put of at most 8 bytes carries its data
// in its slot (the paper's inline transfer): the target copies the data
// into its window, then takes the notice, so one cache line crosses
// between the cores instead of two. Such a put is complete at the target
// once its data is there: Flush completes it without waiting for the
// target, by claiming the slot and copying the data itself if the target
// has not begun to (the target then only takes the notice), and no later
// operation of the same origin to that target overtakes it. Every other
// operation is complete when its call returns.
//
// Waiting: a waiter polls, yields, then sleeps on its endpoint's doorbell
// (a futex word in its control segment), which producers ring only when
// someone sleeps. A sleeper registers (Prepare) before its last look and
// sleeps only while the doorbell's count still equals what it read then,
// so no ring between its look and its sleep is lost, for any number of
// sleeping goroutines. Peers are watched for failure: a rank whose process is
// gone is reported to the engine within Config.CheckInterval.
//
// Segment files are named after the job (NewJobID), so that the job's
// owner removes them when it ends (RemoveJob) and those of a job whose
// owner died are found and removed later (RemoveStale).
package shm
