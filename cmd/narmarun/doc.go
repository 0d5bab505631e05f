// Narmarun starts the ranks of a narma job as processes on one host.
//
// Usage:
//
//	narmarun -n N [flags] program [args...]
//
// It starts N processes of program with args. Each finds its rank, the
// job size, the job identifier, the transport, the job secret and the
// address of the launcher's bootstrap socket in its environment
// (NARMA_RANK, NARMA_SIZE, NARMA_JOB, NARMA_TRANSPORT, NARMA_SECRET,
// NARMA_BOOTSTRAP), through which the ranks exchange what they need to
// connect. Flags end at the program name: everything after it goes to the
// program unchanged.
//
// The flags are:
//
//	-n N               number of ranks (required, at least 1)
//	--timeout D        stop the job after duration D (exit status 124); 0, the default, means no limit
//	--tag-output       prefix each line the ranks print with "[rank] "
//	--transport NAME   transport between the ranks: "shm" (the default) or "tcp"
//	--grace D          time between SIGTERM and SIGKILL when stopping the ranks (default 2s)
//	-v                 report the job, the ranks' pids and stale segments removed, on stderr
//
// The transports are "shm", shared memory (Linux only: /dev/shm mappings
// and futexes), and "tcp", TCP connections over loopback, each one
// authenticated with the job secret: a fresh random 32-byte secret that
// narmarun makes for every job and gives the ranks, hex-encoded, in
// NARMA_SECRET (narmarun never prints it, not even with -v). With tcp
// the ranks listen on 127.0.0.1 (NARMA_TCP_LISTEN=127.0.0.1:0), and
// NARMA_TCP_TIMEOUT in narmarun's own environment, if set, is the peer
// timeout (a duration, such as 30s: how long a silent rank is waited for
// before it is declared failed; the transport's default otherwise).
//
// narmarun sets the job's variables itself: those the ranks would inherit
// from its environment are dropped. In particular a NARMA_TRANSPORT there
// (which chooses the transport of goroutine ranks, see narma.Run) does
// not choose the job's transport; --transport does.
//
// Each rank runs in its own process group, and on Linux dies with the
// launcher even if the launcher is killed. Ranks read no standard input.
// Without --tag-output their output passes through unchanged; with it,
// lines are kept whole (a line longer than 64 KiB is cut into several).
//
// When a rank fails (exits with a status other than 0 or is killed by a
// signal) narmarun reports it and stops the others: SIGTERM to each
// rank's process group, SIGKILL after the grace period. It does the same
// on timeout, on SIGINT, SIGTERM or SIGHUP, and, after a grace period for
// the ranks to end by themselves, when the bootstrap fails. Whatever the
// outcome, it removes the job's shared-memory segments and its temporary
// directory; at start it removes the segments of jobs whose launcher died
// without cleaning up.
//
// Exit status: 0 when every rank exits with 0; otherwise the status of
// the first rank to fail, 128 plus the signal number for a rank killed by
// a signal (when the first rank to fail exited with an error and another
// is found killed by a signal narmarun did not send within half a second,
// the killed one is taken for the first: the other most likely exited
// because it lost it); 124 on timeout; 128 plus the signal number when narmarun is
// interrupted (130 for SIGINT, 143 for SIGTERM); 127 when the program
// cannot be found, 126 when it cannot be run; 2 for a bad command line;
// 1 when narmarun itself or the bootstrap fails.
package main
