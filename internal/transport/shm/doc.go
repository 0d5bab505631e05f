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
// nothing is dropped. A notified put copies its data into the target's
// window, then publishes its notice: every operation is complete at its
// target when its call returns (Caps.Synchronous), so Flush and
// FlushLocal wait for nothing and a stream of notified puts never waits
// for its consumer. (The paper's inline transfer, the data of a small put
// riding in its notice's slot, would save the target one cache line but
// leave the put incomplete until the target took the notice: every Flush
// would then wait for the consumer, a round trip per message in a
// pipeline.)
//
// Active messages travel through a byte ring per (source, target) pair;
// one whose payload is 64 KiB or more goes by single copy where the
// kernel allows it (CMAStatus): its record carries the payload's address
// in the sender, the target reads it with process_vm_readv and
// acknowledges, and SendAM returns then. A target that cannot read the
// sender acknowledges the failure and the message, with every later one
// to it, goes through the ring.
//
// Waiting: a waiter polls, yields, then sleeps on its endpoint's doorbell
// (a futex word in its control segment), which producers ring only when
// someone sleeps. A sleeper registers (Prepare) before its last look and
// sleeps only while the doorbell's count still equals what it read then,
// so no ring between its look and its sleep is lost, for any number of
// sleeping goroutines. Producers publish notices with plain stores; a
// sleeper runs a global memory barrier (membarrier(2)) between its
// registration and its last look, so that it sees every notice published
// before, or its publisher sees it registered. The model in the model
// directory checks that protocol with spin. Peers are watched for
// failure: a rank whose process is gone is reported to the engine within
// Config.CheckInterval.
//
// The files, one job each: shm_linux.go (configuration, New, Close),
// layout_linux.go (the control segment), ring_linux.go (the notice ring
// and the records of the byte rings), expose_linux.go (the exposure
// table), region_linux.go (the data operations), notify_linux.go
// (notices and flushes), am_linux.go (active messages), cma_linux.go
// (single copy), poll_linux.go (draining, polling and the doorbell),
// progress_linux.go (the background goroutine and the watch on peers),
// heap_linux.go (the segments windows are allocated from),
// membarrier_linux.go (the sleepers' barrier) and job.go (segment names
// and cleanup). System calls are internal/sys's.
//
// Segment files are named after the job (NewJobID), so that the job's
// owner removes them when it ends (RemoveJob) and those of a job whose
// owner died are found and removed later (RemoveStale).
package shm
