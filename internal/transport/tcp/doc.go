// Package tcp is narma's transport between hosts: ranks talk over TCP
// (IPv4 or IPv6), and the paper's claim about message counts holds frame
// for frame. A put, an accumulate or a notified put is one frame, header
// and payload, that the target's reader goroutine checks, writes into the
// window and then delivers the notice of; a get or a fetching atomic is a
// request and a reply; a flush is a request that the target answers once
// it has applied everything before it. Put + flush + flag therefore costs
// three frames and a reply where a notified put costs one. Transfers of
// more than 4 MiB are split into frames of 4 MiB, applied in order, the
// notice riding on the last: a frame in progress holds up what follows
// it on its connection, heartbeats included.
//
// # Connections
//
// Every endpoint listens on one address (Config.Listen: the interface
// that reaches the other ranks, loopback by default) and learns the
// others' through the job's start-up exchange. Connections are opened on
// first use, not at start-up: a rank that talks to a few neighbours holds
// a few connections (each with a 32 KiB read buffer, a reader goroutine
// and, on the target side, a 16 KiB reply buffer), so memory per rank
// grows with the peers it talks to, not with the job. A rank's requests
// to a peer travel on the connection it opened to that peer, the peer's
// replies on the same connection back; requests from one origin to one
// target are therefore applied in issue order, and a notice is delivered
// after everything issued before it. The first use of a peer pays one
// connection set-up, usually while the engine looks up the peer's window
// (Region), which is a request and reply itself.
//
// Progress is asynchronous: each connection's reader applies requests
// and answers them without the target's program calling anything, so
// passive-target operations complete on their own. Writes happen on the
// calling goroutine (a put is complete at the origin when Put returns:
// the payload is in the kernel), and large payloads go out with their
// header in one writev; at the target a payload that fits the read
// buffer is taken from it whole, so that a frame cut short writes
// nothing, and a larger one is read straight into window memory.
//
// # Polling reads
//
// A reader that waits in the runtime's network poller is woken one to
// several microseconds after its frame arrived, and tens of them on a
// loaded machine. So on Linux, while the ranks of the host each have a
// core (Host.Ranks, the ranks whose address names this host, at most
// the cores; for the goroutine ranks of a Group, at most GOMAXPROCS), a
// reader that finds its socket empty polls it for Config.Spin (50 us by
// default) before it waits, as MPI libraries poll for messages, yielding
// the processor to the process's other goroutines between polls. A
// yielding goroutine keeps the runtime from polling the network (it does
// so when it has nothing else to run, or every 10 ms), so the poll also
// ends as soon as any connection or listener of the process's endpoints
// has something (an epoll set of all of them, looked at without
// waiting), while one of their writes, dials or handshakes is under way
// (these wait in the runtime's poller), and on Close or a new read
// deadline. Other network I/O of the program may wait those 10 ms while
// readers poll. Config.Spin -1 turns polling off.
//
// # Security
//
// Every connection starts with a handshake in which both ends name the
// version of the protocol they speak and prove, with HMAC-SHA256 over
// fresh nonces, that they hold the job secret (Config.Secret; the
// launcher makes one per job and hands it to the ranks in their
// environment). A peer without it is refused before it can send a
// frame; ranks of different versions refuse each other, with an error
// that names both. A handshake must end within 10 seconds; at most 64
// incoming connections may be in theirs at once (more are closed at
// once), and Close closes them without waiting. Every frame is then
// checked before anything is written: its kind, the fields that kind
// uses, and then, with the region it names, its displacement, length
// and alignment. A malformed frame, or one that reaches outside its
// window, closes the connection and fails that peer; a frame for a
// region that was just withdrawn is refused and reported to the origin
// at its next flush. A header alone cannot make the target allocate
// much: an accumulate's operand and a get's reply (which the target
// holds in memory of its own) are refused beyond 4 MiB, and the payload
// of a large active message is allocated as its bytes arrive. Nor can a
// peer hold a window by not reading its replies: a get's reply is copied
// out of the window (into the reply buffer, or for a large one into a
// buffer the connections share) before it is written, so that Unexpose
// never waits for the network.
//
// # Failure
//
// A peer whose connection breaks, or that stays silent longer than
// Config.PeerTimeout, is declared failed: the failure handler is told,
// and every call that waits on it (flushes, gets, lookups) fails with an
// error matching transport.ErrPeer. A connection that was idle, or whose
// peer said nothing, for a fifth of the timeout carries a ping, which
// goes out ahead of the next frame and which the peer answers; progress
// through a large payload, read from the peer or taken by it, counts as
// a sign of life too, so a slow link is not taken for a dead peer.
// Close says goodbye to every connected peer first, so that an orderly
// exit is never taken for a failure.
//
// # Counting
//
// Endpoint.Stats counts the frames and bytes sent and received, by kind,
// for tests and benchmarks to check message counts.
package tcp
