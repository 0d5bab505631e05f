// Package bootstrap is how the ranks of a multi-process job find each
// other before any transport exists.
//
// A launcher (cmd/narmarun) creates a [Server], on a Unix socket ([Listen])
// when every rank runs on its host or on a TCP address ([ListenTCP]) when
// some run on others, and starts the ranks with the job described in
// their environment ([Env], [FromEnv]). Each rank [Dial]s the server,
// introducing itself with its rank and pid, and then calls
// [Client.Exchange] any number of times: each call is one round of an
// allgather in which every rank contributes a blob of at most 1 MiB and
// receives every rank's blob, indexed by rank. A round is also a barrier.
// Transports use the rounds to swap the names of their segments or
// addresses; nothing on the data path goes through here.
//
// A rank tells the server, with [Client.PeerFailed], of each peer its
// transport declares failed, before its program hears of it
// ([Server.PeerFailures]): a launcher tells by these reports the rank
// that failed first from those that failed because they lost it, when
// the order in which the ranks' processes end does not tell.
//
// After its last round a rank calls [Client.Watch] and keeps its
// connection open until its process exits. The server therefore sees a
// rank end when its connection does ([Server.Departures] tells when, for
// the launcher to find which of several failed ranks failed first), and a
// rank sees the launcher give up on the job (stop it, or die) when the
// server's end closes: it must then exit, since a rank started on another
// host through ssh has no other sign of it. A launcher that stops the job
// first gives every rank its reason ([Server.Halt]) and waits until each
// watching rank has acted on it ([Client.WatchTold]), so that a rank can
// say it was stopped before it sees any other rank end.
//
// # Security
//
// A Unix socket has mode 0600 and, on Linux, the server checks that each
// peer runs as the same user. Over TCP, every connection starts with a
// challenge-response handshake in which the rank and the server prove to
// each other, with HMAC-SHA256 over fresh nonces, that they hold the job
// secret (NARMA_SECRET); the server reads nothing else from a connection
// that fails it, tells it nothing, and closes it: a stranger, or a rank of
// another job, has no effect on the job. The handshake authenticates; it
// does not encrypt (see auth.go for its messages).
//
// # Environment
//
// A rank finds its job in these variables ([FromEnv]; [Env.Environ]
// writes them):
//
//	NARMA_RANK         this process's rank, 0..size-1
//	NARMA_SIZE         number of ranks
//	NARMA_BOOTSTRAP    the server's address, "unix:" + socket path, or
//	                   "tcp:" + host:port
//	NARMA_JOB          job identifier (names the shared-memory segments)
//	NARMA_TRANSPORT    transport between the ranks: "shm" or "tcp"
//	NARMA_SECRET       job secret, hex-encoded; the launcher makes a fresh
//	                   random one for every job; the tcp transport and a
//	                   "tcp:" bootstrap address need it (at least 16 bytes)
//	                   to authenticate their connections
//	NARMA_TCP_LISTEN   address the tcp transport listens on, "host:port",
//	                   or "auto" (optional; the default, auto, is the local
//	                   address of the rank's bootstrap connection, port 0:
//	                   the interface that reaches the launcher's host,
//	                   loopback for a Unix socket)
//	NARMA_TCP_TIMEOUT  the tcp transport's peer timeout, a Go duration
//	                   (optional; default the transport's, 10s)
//	NARMA_TCP_SPIN     how long the tcp transport's readers poll their
//	                   sockets before they wait, a Go duration; 0 for
//	                   never (optional; default the transport's choice)
//	NARMA_HOST         index of the rank's host in the launcher's list of
//	                   hosts, from 0 (optional; default 0): ranks with the
//	                   same index share a machine, and could share memory
//
// The secret is as private as the environment of the user's processes;
// [Env]'s String method leaves it out.
//
// # Failure
//
// The server fails the whole job, and every rank's pending or next
// Exchange returns an error naming the cause (a watching rank is told
// too), when a rank sends a bad introduction (rank out of range, rank
// already connected, wrong job size), sends a malformed message, or
// closes its connection while the other ranks wait for it in a round. A rank that closes its connection
// after its last round is done, not failed: the job ends well once every
// rank has done so. The error Serve returns for a failed job has a method
// FaultyRank() int, found with an interface assertion, that tells the
// launcher which rank caused the failure (-1 if none did): the other
// ranks may well exit with an error of their own first.
//
// # Wire format
//
// Over TCP, the handshake comes first. Then, as over a Unix socket,
// every message is a frame: a 4-byte little-endian length n, then n bytes,
// the first of which is the message kind. n is at least 1 and at most
// 1 MiB plus a small header, so a reader never allocates more than that
// for one message. The kinds are
//
//	'H' rank → server  hello: "NRMB", version, rank, size, pid (4 × uint32)
//	'A' server → rank  hello accepted (no body)
//	'D' rank → server  data: round (uint32), blob
//	'B' server → rank  one rank's blob of a round: round, rank (uint32), blob;
//	                   size of them, in rank order, make up the answer
//	'E' server → rank  the job ends: the reason, a sentence that stands alone
//	                   (UTF-8 text: "the job failed: ...", "the launcher
//	                   stopped the job: ..."); the server closes the
//	                   connection once every rank has been sent its 'E'
//	'F' rank → server  a peer failed: rank (uint32), a peer whose failure
//	                   this rank's transport reported; sent at any time
//	                   after the hello, and read by the server until the
//	                   connection ends, even once the job is over
//	'W' rank → server  watching: the rank has done its last round and will
//	                   answer an 'E' with a 'T' (no body)
//	'T' rank → server  told: a watching rank has acted on the server's
//	                   'E' (no body)
//
// All integers are little-endian. A malformed frame (unknown kind, wrong
// body length, bad magic or version, a length out of bounds) closes the
// connection with an error.
package bootstrap
