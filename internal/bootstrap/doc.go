// Package bootstrap is how the ranks of a multi-process job find each
// other before any transport exists.
//
// A launcher (cmd/narmarun) creates a [Server] on a Unix socket and starts
// the ranks with the job described in their environment ([Env],
// [FromEnv]). Each rank [Dial]s the server, introducing itself with its
// rank and pid, and then calls [Client.Exchange] any number of times: each
// call is one round of an allgather in which every rank contributes a blob
// of at most 1 MiB and receives every rank's blob, indexed by rank. A round
// is also a barrier. Transports use the rounds to swap the names of their
// segments or addresses; nothing on the data path goes through here.
//
// # Environment
//
// A rank finds its job in these variables ([FromEnv]; [Env.Environ]
// writes them):
//
//	NARMA_RANK         this process's rank, 0..size-1
//	NARMA_SIZE         number of ranks
//	NARMA_BOOTSTRAP    the server's address, "unix:" + socket path
//	NARMA_JOB          job identifier (names the shared-memory segments)
//	NARMA_TRANSPORT    transport between the ranks: "shm" or "tcp"
//	NARMA_SECRET       job secret, hex-encoded; the launcher makes a fresh
//	                   random one for every job; the tcp transport needs it
//	                   (at least 16 bytes) to authenticate its connections
//	NARMA_TCP_LISTEN   address the tcp transport listens on, "host:port"
//	                   (optional; default 127.0.0.1:0)
//	NARMA_TCP_TIMEOUT  the tcp transport's peer timeout, a Go duration
//	                   (optional; default the transport's, 10s)
//
// The secret is as private as the environment of the user's processes;
// [Env]'s String method leaves it out.
//
// # Failure
//
// The server fails the whole job, and every rank's pending or next
// Exchange returns an error naming the cause, when a rank sends a bad
// introduction (rank out of range, rank already connected, wrong job
// size), sends a malformed message, or closes its connection while the
// other ranks wait for it in a round. A rank that closes its connection
// after its last round is done, not failed: the job ends well once every
// rank has done so. The error Serve returns for a failed job has a method
// FaultyRank() int, found with an interface assertion, that tells the
// launcher which rank caused the failure (-1 if none did): the other
// ranks may well exit with an error of their own first.
//
// # Wire format
//
// Every message is a frame: a 4-byte little-endian length n, then n bytes,
// the first of which is the message kind. n is at least 1 and at most
// 1 MiB plus a small header, so a reader never allocates more than that
// for one message. The kinds are
//
//	'H' rank → server  hello: "NRMB", version, rank, size, pid (4 × uint32)
//	'A' server → rank  hello accepted (no body)
//	'D' rank → server  data: round (uint32), blob
//	'B' server → rank  one rank's blob of a round: round, rank (uint32), blob;
//	                   size of them, in rank order, make up the answer
//	'E' server → rank  the job failed: reason (UTF-8 text); the server closes
//
// All integers are little-endian. A malformed frame (unknown kind, wrong
// body length, bad magic or version, a length out of bounds) closes the
// connection with an error.
package bootstrap
