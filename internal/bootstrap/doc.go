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
