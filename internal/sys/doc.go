// Package sys is narma's floor on the operating system: the system calls
// that the standard library does not wrap, each behind a small function.
// It is the only package of narma that imports golang.org/x/sys/unix, so
// that what narma asks of the kernel is in one place, and a port to
// another system starts here.
//
// What it offers, and who uses it:
//
//   - shared segments: files mapped shared and populated (CreateSegment,
//     OpenSegment), and the release of a mapping that keeps its address
//     range (Retire); the shared-memory transport.
//   - futexes on words of shared mappings (FutexWait, FutexWake), a yield
//     of the processor to any process (Yield), and the global memory
//     barrier of membarrier(2) (GlobalBarrierReady, GlobalBarrier); the
//     shared-memory transport's doorbell and ring.
//   - processes: whether one exists (Alive), letting the launcher's
//     children read this process's memory (AllowPeers) and reading
//     theirs (ReadProcess, process_vm_readv); liveness and single-copy
//     messages of the shared-memory transport.
//   - sockets: the user of the process at the other end of a Unix socket
//     (PeerUID); the bootstrap's check of local ranks. An epoll set looked
//     at without waiting (Epoll); the polling reads of the TCP transport.
//
// Functions that only Linux provides live in files for Linux; the
// packages that call them are built for Linux only, or have their own
// fallback.
package sys
