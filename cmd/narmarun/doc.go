// Narmarun starts the ranks of a narma job as processes, on this host or
// on several.
//
// Usage:
//
//	narmarun -n N [flags] program [args...]
//	narmarun --hosts host[:slots],... [-n N] [flags] program [args...]
//
// It starts N processes of program with args. Each finds its rank, the
// job size, the job identifier, the transport, the job secret, the index
// of its host and the address of the launcher's bootstrap server in its
// environment (NARMA_RANK, NARMA_SIZE, NARMA_JOB, NARMA_TRANSPORT,
// NARMA_SECRET, NARMA_HOST, NARMA_BOOTSTRAP), through which the ranks
// exchange what they need to connect. Flags end at the program name:
// everything after it goes to the program unchanged.
//
// The flags are:
//
//	-n N                  number of ranks (at least 1; required without --hosts or --hostfile,
//	                      whose slots it defaults to the sum of)
//	--hosts LIST          run the ranks on the hosts of LIST, host[:slots],... (slots default to 1)
//	--hostfile FILE       the same, from FILE: one host[:slots] per line, # starts a comment
//	--launcher CMD        remote-start agent for the other hosts (default "ssh"); words separated by spaces
//	--bootstrap-addr A    with ranks on other hosts, the bootstrap listens on A, ip:port (default:
//	                      this host's address towards the first other host, port 0)
//	--timeout D           stop the job after duration D (exit status 124); 0, the default, means no limit
//	--tag-output          prefix each line the ranks print with "[rank] ", or "[rank@host] " with hosts
//	--transport NAME      transport between the ranks: "shm", "tcp" or "hybrid" (default shm on
//	                      one host, hybrid when ranks run on other hosts)
//	--grace D             time between SIGTERM and SIGKILL when stopping the ranks (default 2s)
//	-v                    report the job, the ranks' pids and hosts, stale segments removed, on stderr
//
// The transports are "shm", shared memory (Linux only: /dev/shm mappings
// and futexes, so every rank on this host); "tcp", TCP connections
// between all ranks, even those of one host; and "hybrid", shared memory
// between the ranks of a host (the same NARMA_HOST) and TCP between hosts,
// as MPI libraries do (a job whose hosts each run one rank is plain tcp).
// TCP connections are each authenticated with the job secret: a fresh random 32-byte
// secret that narmarun makes for every job and gives the ranks,
// hex-encoded, in NARMA_SECRET (narmarun never prints it, not even with
// -v). With tcp, the ranks of a job on this host listen on 127.0.0.1
// (NARMA_TCP_LISTEN=127.0.0.1:0), those of a job on several hosts on the
// interface through which they reach the bootstrap server
// (NARMA_TCP_LISTEN=auto), never on a wildcard address; and
// NARMA_TCP_TIMEOUT in narmarun's own environment, if set, is the peer
// timeout (a duration, such as 30s: how long a silent rank is waited for
// before it is declared failed; the transport's default otherwise), and
// NARMA_TCP_SPIN how long a rank's readers poll their sockets before they
// wait (a duration, such as 50us; 0 for never; unset, the transport
// polls while the ranks of a host each have a core).
//
// # Several hosts
//
// With --hosts or --hostfile, the ranks are placed on the hosts in
// order, in blocks: ranks 0 to slots-1 on the first host, the next ones
// on the second, and so on; fewer slots than ranks is an error, and hosts
// left without ranks are not used. Each rank gets NARMA_HOST, the index
// of its host in the list (from 0; 0 for every rank of a job without
// hosts): ranks with the same NARMA_HOST share a machine, which a
// transport may use to pick shared memory between them. A host may not
// be listed twice.
//
// Ranks on this host (named "localhost", "127.0.0.1", "::1" or its
// hostname) start directly. The others start through the launcher agent,
// run as mpirun's rsh launcher runs it:
//
//	CMD host env NARMA_RANK=r ... sh -c SCRIPT narmarun DIR PROGRAM ARGS...
//
// where the words after the host are quoted for a POSIX shell on that
// host (ssh hands them to the user's shell as one command line). The job
// secret is on no command line: narmarun writes it to the agent's
// standard input, which the agent must pass on to the remote command (ssh
// does; a plain "sh -c" wrapper around a container or namespace does
// too), and SCRIPT reads it from there, changes to narmarun's working
// directory DIR if the host has it (the agent's own otherwise), and runs
// the program. The program is run at the path where narmarun finds it on
// this host (the hosts must share that layout, as with mpirun); the
// remote ranks get the job's variables, not narmarun's environment. The
// agent must not prompt: it runs in a process group of its own, which a
// read from the terminal stops (for ssh: keys, known hosts; --launcher
// "ssh -o BatchMode=yes" makes ssh fail rather than ask).
//
// With ranks on another host, the bootstrap server listens on TCP
// (--bootstrap-addr, by default this host's address towards the first
// other host, port 0), and every connection to it must first prove that
// it holds the job secret; the transport must be tcp or hybrid. Each rank keeps its
// bootstrap connection until it exits, and exits when that connection
// ends: killing a launcher agent such as ssh does not kill the remote
// command, so when narmarun stops a job it closes the bootstrap
// connections, and the ranks on other hosts exit on their own (as they do
// if narmarun dies); their agents then exit with their statuses, and those
// still running after the grace period are killed. The exit status
// narmarun sees for a remote rank is its agent's (ssh passes on the
// remote command's, but says 255 for one killed by a signal); a status of
// 128 plus a signal number counts as a death by that signal.
//
// narmarun sets the job's variables itself: those the ranks would inherit
// from its environment are dropped. In particular a NARMA_TRANSPORT there
// (which chooses the transport of goroutine ranks, see narma.Run) does
// not choose the job's transport; --transport does.
//
// Each rank (or launcher agent) runs in its own process group, and on
// Linux dies with the launcher even if the launcher is killed. Ranks
// read no standard input.
// Without --tag-output their output passes through unchanged; with it,
// lines are kept whole (a line longer than 64 KiB is cut into several).
//
// When a rank fails (exits with a status other than 0 or is killed by a
// signal) narmarun finds the rank that failed first, reports it and
// stops the others. The rank it reaps first need not be that one: over
// tcp, ranks that lose a peer can exit before narmarun sees the peer
// end. So every rank tells narmarun, through its bootstrap connection,
// which peers its transport declared failed, before its program hears of
// it; narmarun follows these reports from the failed rank it reaped to
// the one that reported none, waiting (a second at most) for each rank
// on the way to end, and names that one, with its own status. Stopping,
// it first tells every
// rank, through its bootstrap connection, that the job is stopped and
// why, so that a rank that exits because of it says so ("narma: rank 2 of
// 4: exiting: the launcher stopped the job: rank 1 (pid 1234) exited with
// status 3"); then SIGTERM to the process group of each rank on this
// host, SIGKILL (of agents too) after the grace period. It does the same
// on timeout, on SIGINT, SIGTERM or SIGHUP, and, after a grace period for
// the ranks to end by themselves, when the bootstrap fails. Whatever the
// outcome, it removes the job's shared-memory segments and its temporary
// directory (named narmarun-PID-...); at start it removes the segments,
// and the temporary directories, of jobs whose launcher died without
// cleaning up (those of a PID that no longer runs, of this user, holding
// no more than a bootstrap socket).
//
// Exit status: 0 when every rank exits with 0; otherwise the status of
// the first rank to fail, passed on unchanged (so 2 for a Go program that
// panicked, 1 for one that returned an error through log.Fatal, and so
// on), 128 plus the signal number for a rank killed by a signal (when,
// without reports of failed peers to tell, the first rank to fail exited
// with an error and another is found killed by
// a signal narmarun did not send within half a second, or, for ranks on
// any host, another failed rank's bootstrap connection ended before the
// first's, that other one is taken for the first: the first most likely
// exited because it lost it); 124 on timeout; 128 plus the signal number
// when narmarun is interrupted (130 for SIGINT, 143 for SIGTERM); 127
// when the program (or the launcher agent) cannot be found, 126 when it
// cannot be run; 125 when narmarun itself fails: a bad command line, an
// error of its own, or a bootstrap failure that no rank's explains (as
// timeout(1) and env(1) do, so that narmarun's own failures are not
// taken for a rank's 1 or 2).
package main
