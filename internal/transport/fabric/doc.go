// Package fabric is narma's transport over libfabric (OFI), for RDMA
// networks (InfiniBand through verbs, Slingshot through cxi, EFA,
// Omni-Path through psm3) and, for development, libfabric's tcp;ofi_rxm,
// sockets and shm providers.
//
// It is built only with the build tag fabric and cgo, against libfabric
// 1.9 or later (Debian: libfabric-dev); without the tag the package is
// this comment, and narma needs neither cgo nor libfabric.
//
// The mapping onto libfabric:
//
//   - one FI_EP_RDM endpoint per rank, its addresses exchanged over the
//     job's bootstrap and inserted in rank order into an FI_AV_TABLE;
//   - an exposed region is one memory registration for remote reads and
//     writes; its Key carries the remote address and fi_mr_key, and the
//     region's slot in the target's table;
//   - Put and Get are fi_write and fi_read; a Put whose notice is a tag
//     or a counter is one fi_writedata, the notice in the 8 bytes of
//     remote CQ data that the target reads from its completion queue,
//     the source from FI_SOURCE;
//   - a notice that does not fit (a signal, a get's notice, an atomic's,
//     CQ data of fewer than 8 bytes) follows its operation as a message,
//     sent once the provider's ordering (msg_order) or the operation's
//     completion guarantees that it arrives after it;
//   - the accumulate family and compare-and-swap are fi_atomic,
//     fi_fetch_atomic and fi_compare_atomic when the provider applies
//     every operation on every element type (fi_query_atomic), unless
//     Config.SoftwareAtomics; otherwise all of them are messages that
//     the target's progress applies with the same code as the
//     shared-memory transports. An endpoint's atomics are all of one
//     kind, and so are a job's (atomic.go);
//   - where the provider wants local buffers registered (FI_MR_LOCAL:
//     verbs, EFA), the endpoint registers its send, bounce and receive
//     buffers once, and a caller's buffer past the bounce size, which
//     libfabric reads or writes in place, for the duration of its
//     operation; Config.RegisterLocal does the same on any provider
//     (mr.go);
//   - active messages and the transport's control messages are
//     fi_send into receive buffers that the target keeps posted; a
//     message larger than a buffer travels in fragments, in order;
//   - operations complete with FI_DELIVERY_COMPLETE where the provider
//     offers it, so that Flush waits for completions only, except the
//     writes of a stream where the provider keeps writes in order
//     (FI_ORDER_WAW, or FI_ORDER_RMA_WAW): after the first write to a
//     peer since its last Flush, writes complete when sent, sparing the
//     target an acknowledgement each, and one write of a word with
//     delivery completion confirms them all where their delivery
//     matters: at a Flush, and before a notice that must come after
//     them (ops.go); where it does not offer it, a Flush also
//     exchanges a message with the target, which answers
//     after everything sent before it (the provider's FI_ORDER_SAW/SAR)
//     or is refused if the provider keeps neither order. There, since a
//     completion no longer says that an operation arrived, every notice
//     is a message and atomics are applied in software, so that order
//     rests on msg_order and the messages' numbers alone.
//
// Progress is manual: waiters of the engine poll the completion queue
// (transport.Poller), and a goroutine per endpoint polls it otherwise,
// sleeping on its wait descriptor where the provider has one.
package fabric
