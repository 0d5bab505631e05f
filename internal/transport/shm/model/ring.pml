/*
 * ring.pml: a Promela model of the shm transport's notice ring and of its
 * doorbell (internal/transport/shm). README.md in this directory maps the
 * model to the Go code and says what is checked and how.
 *
 * Processes:
 *   Producer(p), p = 0..NPROD-1: a rank that sends K notices (producer 0:
 *     K0) to the target with Endpoint.notify: tryPush, then ring; while
 *     the ring is full, ring and back off.
 *   Progress: the target's progress goroutine (Endpoint.progress).
 *   Waiter: a goroutine of the target that waits in the engine
 *     (Comm.waitPolling: pollWait, then sleepWait on the doorbell) until
 *     `want` notices have been handled, and then returns. want is chosen
 *     nondeterministically in 1..TOTAL (TOTAL if the Waiter is the only
 *     consumer), so the model covers a waiter that leaves notices for
 *     Progress to take.
 *   Memory: the store buffers of the consumers' threads (see below).
 *   Final: a checker that runs only once no other process can move
 *     (Promela's `timeout`, a global deadlock detector, not a futex
 *     timeout). It asserts that every notice was taken.
 * NO_WAITER or NO_PROGRESS leaves one of the two consumers out.
 *
 * Memory model. Go's sync/atomic operations are sequentially consistent:
 * each is one Promela statement. The slot's plain fields are written in
 * the step of the producer's seq store and read in the step of the
 * consumer's seq load (they are not touched by anyone else in between
 * unless a bug lets them be, and then the consumer reads wrong values).
 * The consumers' release stores, mem.StoreRelease (hdr.storeDeq, the
 * unlock of draining), are plain MOVs on amd64: x86-TSO lets them wait in
 * the thread's store buffer while the thread's later loads go ahead. The
 * model keeps them in bdeq[c] and bunl[c] until the Memory process makes
 * them visible, in program order. The thread itself reads its buffered
 * values (DEQ(c), HELD(c)), and its locked instructions wait for its
 * buffer to empty (FENCED(c)): atomic read-modify-writes, sync/atomic
 * stores (XCHG), the engine's handler (atomics, mutexes) and futex calls.
 * At most one store to deq is buffered at a time, which is what the code
 * produces, because every handler empties the buffer. NO_TSO makes the
 * release stores sequentially consistent.
 *
 * The producers publish a slot with a release store of its seq too
 * (slot.storeSeq with ctl.relaxed), kept in bseq[p] until Memory makes
 * it visible, and load sleepers (ring) while it may still be there; the
 * producer's next locked instruction (the CAS on enq) waits for it. What
 * makes that safe is the consumers' global barrier, membarrier(2), which
 * they run after they register as sleepers and before their last look
 * (Endpoint.lastLook): it empties every producer's store buffer at once.
 * FENCED_PUBLISH models the fallback for kernels without the barrier: the
 * seq store is sequentially consistent and nobody runs the barrier.
 *
 * The doorbell. bell is a uint32 that futex compares with a ticket. It is
 * modelled exactly, without a counter and without wrap-around: rung[c]
 * says whether bell was incremented since consumer c loaded its ticket.
 * bell.Load() sets rung[c] = 0, bell.Add(1) sets every rung bit, and
 * bell == ticket is !rung[c]. futex_wait(&bell, ticket) atomically
 * compares and queues the caller (asleep[c] = 1), then blocks until a
 * futex_wake_all dequeues it. There is NO timeout and no spurious return,
 * so a wake-up that nobody sends is a sleep that never ends.
 *
 * Compile-time switches (spin -DNAME):
 *   BUG_SLEEPERS_EARLY  the producer loads sleepers before its seq store
 *                       becomes visible, and rings on that value. This is
 *                       also what a release (plain MOV) store of seq does
 *                       on amd64
 *   BUG_NO_LOOK         the consumers do not look again after they
 *                       register as sleepers (Waiter: Poll and cond, then
 *                       Prepare, then Sleep without pendingRacy;
 *                       Progress: no look after sleepers.Add(1))
 *   BUG_DEQ_EARLY       the consumer stores deq+1 before it reads the
 *                       slot's fields
 *   BUG_NO_RECHECK      a producer whose CAS on enq failed retries the
 *                       CAS at the new enq without checking for room
 *   BUG_PROGRESS_SLEEP  progress looks with pendingRacy after it
 *                       registers, which says "nothing" while another
 *                       goroutine drains, and then sleeps (the code
 *                       before commit 1e7df8e)
 *   BUG_RELEASE_PREPARE the Waiter's Prepare registers with a release
 *                       store (load sleepers, StoreRelease32 of +1): its
 *                       look can pass its registration (with TSO only)
 *   BUG_WAIT_DRAIN      Poll's fast path ignores draining (reported only
 *                       with NO_ENGINE_WAKE: the engine's wake after each
 *                       handled notice covers that case)
 *   BUG_TAKEOVER_NO_WAKE  a poller that takes Progress's registration
 *                       over (poll: takeOver) does not wake it
 *   BUG_TAKEOVER_TWICE  Progress, woken, leaves the sleepers even when a
 *                       poller took its registration over
 *   NO_FAIL_RING        producers do not ring when the ring is full (the
 *                       properties still hold: that ring is a hint)
 *   NO_ENGINE_WAKE      handlers do not call the engine's wake
 *   BUG_NO_MEMBARRIER   the consumers do not run the global barrier
 *                       before their last look, while the producers
 *                       publish with release stores
 *   FENCED_PUBLISH      the producers publish with an SC store (XCHG, or
 *                       MOV and a locked instruction), and the consumers
 *                       run no barrier: a kernel without membarrier
 *   NO_TSO              the consumers' release stores are SC
 *   HEADSEEN            model ctl.headSeen literally (see Producer)
 *   NO_WAITER, NO_PROGRESS  leave a consumer out
 *   LIVE                check the LTL property all_taken (weak fairness)
 *                       instead of running the Final checker
 *   NPROD, K, K0        producers, notices per producer, notices of
 *                       producer 0 (defaults 3, 2, K)
 */

#ifndef NPROD
#define NPROD 3
#endif
#ifndef K
#define K 2
#endif
#ifndef K0
#define K0 K
#endif
#define TOTAL (K0 + (NPROD - 1) * K)
#define SLOTS 2                 /* notice ring slots (a power of two) */

/* pos - head >= slots in uint64 arithmetic (pos < head wraps: "full") */
#define FULL(pos, head) ((pos) < (head) || (pos) - (head) >= SLOTS)

#define PG 0                    /* consumer index of Progress */
#define WT 1                    /* consumer index of Waiter */
#define NONE 255                /* an empty slot field; an empty store buffer */

/* header (layout_linux.go) */
byte enq;                       /* hdr.enq */
byte deq;                       /* hdr.deq, as memory holds it */
byte sleepers;                  /* hdr.sleepers, as memory holds it */
bit  rung[2];                   /* hdr.bell changed since consumer c's ticket */
bit  asleep[2];                 /* consumer c is queued in futex_wait(&hdr.bell) */

/* slots (layout_linux.go: slot) */
byte seq[SLOTS];                /* slot.seq: pos when free, pos+1 when full */
byte slsrc[SLOTS];              /* slot.src (plain) */
byte slk[SLOTS];                /* the other plain fields: the notice's number at its producer */

/* the consumer side of the Endpoint (poll_linux.go, progress_linux.go) */
bit  draining;                  /* Endpoint.draining (drainLock), as memory holds it */
bit  polled;                    /* Endpoint.polled */
bit  pgreg;                     /* Endpoint.asleep != 0: Progress's registration, which a poller may take over */

/* store buffers of the consumers' threads */
byte bdeq[2];                   /* a storeDeq not yet visible, or NONE */
bit  bunl[2];                   /* a draining.unlock not yet visible */
#ifdef BUG_RELEASE_PREPARE
byte bsl = NONE;                /* the Waiter's store to sleepers not yet visible */
#define SLFENCE(c) && ((c) != WT || bsl == NONE)
#else
#define SLFENCE(c)
#endif

#ifdef NO_TSO
#define FENCED(c) (1)
#define DEQ(c)    (deq)
#define HELD(c)   (draining)
#else
#define FENCED(c) (bdeq[c] == NONE && bunl[c] == 0 SLFENCE(c))
#define DEQ(c)    (bdeq[c] != NONE -> bdeq[c] : deq)    /* store forwarding */
#define HELD(c)   (bunl[c] -> 0 : draining)
#endif

/* store buffers of the producers' threads: a published seq (pos + 1) not
 * yet visible, or NONE */
byte bseq[NPROD];
#ifdef FENCED_PUBLISH
#define PFENCED(p) (1)
#else
#define PFENCED(p) (bseq[p] == NONE)
#endif

/* producer p's buffered seq store becomes visible */
inline pflush(p) {
	atomic {
		if
		:: bseq[p] != NONE -> seq[(bseq[p] - 1) % SLOTS] = bseq[p]; bseq[p] = NONE
		:: else -> skip
		fi
	}
}

/* membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) by consumer c
 * (Endpoint.lastLook): a syscall, so c's own buffer is empty first, and
 * every producer's buffered store is visible when it returns. */
inline membarrier(c) {
#if !defined(FENCED_PUBLISH) && !defined(BUG_NO_MEMBARRIER)
	atomic {
		FENCED(c) ->
		for (i : 0 .. NPROD - 1) {
			if
			:: bseq[i] != NONE -> seq[(bseq[i] - 1) % SLOTS] = bseq[i]; bseq[i] = NONE
			:: else -> skip
			fi
		};
		i = 0
	}
#else
	skip
#endif
}

/* the engine (internal/engine) and the checker's bookkeeping */
byte esl;                       /* Comm.sleepers (wait.go: sleepWait) */
byte taken;                     /* notices handled */
byte nextk[NPROD];              /* next notice expected from each producer */

/* hdr.bell.Add(1) */
inline bell_add() {
	atomic { rung[PG] = 1; rung[WT] = 1 }
}

/* futexWakeAll(&hdr.bell) */
inline futex_wake_all() {
	atomic { asleep[PG] = 0; asleep[WT] = 0 }
}

/* Endpoint.ring(t), by a producer */
inline ring() {
	if
	:: sleepers != 0 -> bell_add(); futex_wake_all()
	:: else -> skip
	fi
}

/* The engine's handler (Comm.handleNotice) of notice (s, kk), run by
 * consumer c: asserts no duplicate, no gap and per-producer FIFO order,
 * then the engine's wake (Comm.wake: Endpoint.Wake if a waiter of the
 * engine is in sleepWait). */
inline handler(c, s, kk) {
	atomic {
		FENCED(c) ->
		assert(s < NPROD);              /* not an empty slot */
		assert(kk == nextk[s]);         /* FIFO per producer, no duplicate, no gap */
		nextk[s]++;
		taken++;
		s = 0; kk = 0
	};
#ifndef NO_ENGINE_WAKE
	if
	:: esl > 0 ->                           /* c.sleepers.Load() > 0 */
		atomic { FENCED(c) -> rung[PG] = 1; rung[WT] = 1 };     /* Wake: bell.Add(1) */
		atomic { FENCED(c) -> asleep[PG] = 0; asleep[WT] = 0 }  /* futexWakeAll */
	:: else -> skip
	fi
#endif
}

/* Not in the Go code: once the consumer has read a slot's fields they are
 * dead until a producer refills the slot, and the model empties them, so
 * that stale contents do not multiply the states (and a read of a slot
 * nobody refilled trips assert(s < NPROD)). */
#define EMPTY(d) slsrc[(d) % SLOTS] = NONE; slk[(d) % SLOTS] = NONE

/* Endpoint.drain (notices only) by consumer c, draining held: loadDeq,
 * pop (the seq load, then the fields), storeDeq(deq+1), the handler. */
inline drain(c, did) {
	did = 0;
	do
	:: atomic {
		d = DEQ(c);                     /* hdr.loadDeq(): only c writes deq now */
		if
		:: seq[d % SLOTS] == d + 1 ->   /* pop: s.seq.Load() == deq+1 */
			ok = 1;
#ifndef BUG_DEQ_EARLY
			s = slsrc[d % SLOTS];   /* pop: the plain fields */
			kk = slk[d % SLOTS];
			EMPTY(d)
#endif
		:: else -> ok = 0; d = 0
		fi
	   };
		if
		:: ok ->
#ifdef NO_TSO
			deq = d + 1;            /* hdr.storeDeq(deq + 1) */
#else
			/* hdr.storeDeq(deq + 1): into the store buffer */
			atomic { bdeq[c] == NONE -> bdeq[c] = d + 1 };
#endif
#ifdef BUG_DEQ_EARLY
			atomic {
				s = slsrc[d % SLOTS];   /* the fields after deq */
				kk = slk[d % SLOTS];
				EMPTY(d)
			};
#endif
			ok = 0; did = 1; d = 0;
			handler(c, s, kk)
		:: else -> break
		fi
	od
}

/* draining.unlock(): a release store */
inline unlock(c) {
#ifdef NO_TSO
	draining = 0
#else
	bunl[c] = 1
#endif
}

/* pending() of consumer c: noticePending(hdr.loadDeq()) (no AM part) */
inline pending(c, res) {
	d = DEQ(c);
	res = (seq[d % SLOTS] == d + 1);
	d = 0
}

/* Endpoint.poll (Poll), by the Waiter */
inline poll() {
	if                                      /* if !polled.Load() { */
	:: polled == 0 ->
		atomic { FENCED(WT) -> polled = 1 }     /* polled.Store(true) } */
	:: else -> skip
	fi;
	/* if a := asleep.Load(); a != 0 && asleep.CompareAndSwap(a, 0) {
	 *	takeOver(): hdr.sleepers.Add(-1); Wake(): bell.Add(1), futexWakeAll } */
	if
	:: pgreg ->                             /* the load: no fence */
		atomic {                        /* the CAS: a locked instruction */
			FENCED(WT) ->
			if
			:: pgreg -> pgreg = 0; go = 1
			:: else -> skip
			fi
		}
	:: else -> skip
	fi;
	if
	:: go ->
		go = 0;
		atomic { FENCED(WT) -> sleepers-- };
#ifndef BUG_TAKEOVER_NO_WAKE
		atomic { FENCED(WT) -> rung[PG] = 1; rung[WT] = 1 };
		atomic { FENCED(WT) -> asleep[PG] = 0; asleep[WT] = 0 }
#else
		skip
#endif
	:: else -> skip
	fi;
	pending(WT, go);
#ifndef BUG_WAIT_DRAIN
	if
	:: go -> skip
	:: else -> go = HELD(WT)                /* || draining.held() */
	fi;
#endif
	if
	:: go ->
		go = 0;
		/* for !draining.tryLock() { Gosched } */
		atomic { FENCED(WT) && draining == 0 -> draining = 1 };
		drain(WT, did);
		did = 0;
		unlock(WT)
	:: else -> skip
	fi
}

/* The Memory process: the consumers' store buffers drain in program
 * order, at any time (for the Waiter: sleepers, then deq, then the
 * unlock). A producer's buffer is drained by the producer itself
 * (pflush), so that weak fairness bounds the time a store waits there, as
 * hardware does. */
proctype Memory()
{
end_mem:
	do
#ifdef BUG_RELEASE_PREPARE
	:: atomic { bsl != NONE -> sleepers = bsl; bsl = NONE }
#endif
	:: atomic { bdeq[PG] != NONE -> deq = bdeq[PG]; bdeq[PG] = NONE }
	:: atomic { bdeq[PG] == NONE && bunl[PG] -> draining = 0; bunl[PG] = 0 }
	:: atomic { bdeq[WT] != NONE SLFENCE(WT) -> deq = bdeq[WT]; bdeq[WT] = NONE }
	:: atomic { bdeq[WT] == NONE && bunl[WT] SLFENCE(WT) -> draining = 0; bunl[WT] = 0 }
	od
}

/* A producer: Endpoint.notify, K times (K0 for producer 0). */
proctype Producer(byte me)
{
	byte k = 0;
	byte pos = 0;
#ifdef HEADSEEN
	byte hs = 0;            /* ctl.headSeen: this rank's view of the target's deq */
#endif
#ifdef BUG_SLEEPERS_EARLY
	bit s = 0;
#endif

	do
	:: k == (me == 0 -> K0 : K) -> break
	:: else ->
		/* notify: for { if tryPush { ring; return }; ring; backoff } */
try:		/* tryPush */
		pos = enq;                              /* hdr.enq.Load() */
#ifdef HEADSEEN
		if
		:: FULL(pos, hs) ->                     /* pos-headSeen.Load() >= slots */
			hs = deq;                       /* headSeen.Store(hdr.loadDeq()) */
			if
			:: FULL(pos, hs) -> goto ringfull       /* return false */
			:: else -> skip
			fi
		:: else -> skip
		fi;
#else
		/* headSeen only spares the load of deq when that load would
		 * say "not full" (headSeen <= deq): loading deq every time
		 * adds a read, not a behaviour, and keeps headSeen out of the
		 * state. */
		if
		:: FULL(pos, deq) -> goto ringfull      /* pos-loadDeq() >= slots: return false */
		:: else -> skip
		fi;
#endif
cas:
		if
		:: atomic { PFENCED(me) && enq == pos -> enq = pos + 1 }       /* hdr.enq.CompareAndSwap(pos, pos+1) */
		:: else ->
#ifdef BUG_NO_RECHECK
			pos = enq; goto cas
#else
			goto try                        /* continue */
#endif
		fi;
#ifdef BUG_SLEEPERS_EARLY
		s = (sleepers != 0);
#endif
		d_step {
			/* the slot's last notice has been taken: nothing is overwritten */
			assert(pos - deq < SLOTS);
			slsrc[pos % SLOTS] = me;        /* s.src, s.kind, ... (plain) */
			slk[pos % SLOTS] = k;
#ifdef FENCED_PUBLISH
			seq[pos % SLOTS] = pos + 1;     /* s.storeSeq(pos + 1, false) */
#else
			bseq[me] = pos + 1;             /* s.storeSeq(pos + 1, true): into the store buffer */
#endif
			pos = 0
		};
		/* the buffered seq may become visible before the load of
		 * sleepers in ring, or after it (below) */
		if
		:: pflush(me)
		:: skip
		fi;
#ifdef BUG_SLEEPERS_EARLY
		if
		:: s -> s = 0; bell_add(); futex_wake_all()
		:: else -> skip
		fi;
#else
		ring();                                 /* e.ring(t) */
#endif
		pflush(me);
		k++
	od;
	goto finish;
ringfull:	/* tryPush returned false */
	pos = 0;
#ifndef NO_FAIL_RING
	ring();                                         /* e.ring(t) */
#endif
	goto try;                                       /* e.backoff(...), then tryPush again */
finish:
	skip
}

/* The progress goroutine: Endpoint.progress, without done, the peer
 * checks, the AM rings and kick (which only ends a timed nap early). */
proctype Progress()
{
	byte d = 0;
	byte s = 0;
	byte kk = 0;
	bit did = 0;
	bit ok = 0;
	bit p = 0;
	byte i = 0;

top:
	do
	:: if
		:: atomic { FENCED(PG) && draining == 0 -> draining = 1 } ->   /* draining.tryLock() */
			drain(PG, did);
			unlock(PG);                             /* draining.unlock() */
			if
			:: did -> did = 0; goto top             /* if did { continue } */
			:: else -> skip
			fi
		:: atomic { FENCED(PG) && draining == 1 -> skip }       /* tryLock failed */
		fi;
		/* if polled.Swap(false) || draining.held(): a 2 ms nap on a
		 * timer, which always ends (not a wake-up), then continue */
		if
		:: atomic { FENCED(PG) && polled == 1 -> polled = 0 } -> goto top
		:: atomic { FENCED(PG) && polled == 0 -> skip } ->
			if
			:: HELD(PG) -> goto top
			:: else -> skip
			fi
		fi;
		rung[PG] = 0;                                   /* b := hdr.bell.Load() */
		atomic { FENCED(PG) -> sleepers++ };            /* hdr.sleepers.Add(1) */
#ifndef BUG_NO_LOOK
		membarrier(PG);                                 /* e.lastLook() */
#ifdef BUG_PROGRESS_SLEEP
		/* if e.pendingRacy() { sleepers.Add(-1); continue } */
		if
		:: HELD(PG) -> p = 0                            /* false while draining is held */
		:: else -> pending(PG, p)
		fi;
		if
		:: p -> p = 0; atomic { FENCED(PG) -> sleepers-- }; goto top
		:: else -> skip
		fi;
#else
		if
		:: HELD(PG) ->                                  /* if e.draining.held() { */
			atomic { FENCED(PG) -> sleepers-- };    /*   sleepers.Add(-1) */
			HELD(PG) == 0;                          /*   for draining.held() { Gosched } */
			goto top                                /*   continue } */
		:: else -> skip
		fi;
		pending(PG, p);                                 /* if e.pending() { */
		if
		:: p -> p = 0; atomic { FENCED(PG) -> sleepers-- }; goto top
		:: else -> skip
		fi;
#endif
#endif
		atomic { FENCED(PG) -> pgreg = 1 };             /* e.asleep.Store(b + 1) */
		/* futexSleep(&hdr.bell, b, e.interval), without its timeout */
		atomic {
			FENCED(PG) ->
			if
			:: rung[PG] == 0 -> asleep[PG] = 1
			:: else -> skip
			fi
		};
end_sleep:	asleep[PG] == 0;
		/* if e.asleep.CompareAndSwap(b+1, 0) { hdr.sleepers.Add(-1) } */
		atomic {
			FENCED(PG) ->
			if
			:: pgreg -> pgreg = 0; sleepers--
#ifdef BUG_TAKEOVER_TWICE
			:: else -> sleepers--
#else
			:: else -> skip
#endif
			fi
		}
	od
}

/* Prepare: hdr.sleepers.Add(1); t := hdr.bell.Load(); e.lastLook(); return t */
inline prepare() {
#ifdef BUG_RELEASE_PREPARE
	d = sleepers;                                   /* a release store of sleepers+1 */
	atomic { bsl == NONE -> bsl = d + 1; d = 0 };
#else
	atomic { FENCED(WT) -> sleepers++ };
#endif
	rung[WT] = 0;
	membarrier(WT)                                  /* e.lastLook(), after the ticket */
}

/* A waiter of the engine: Comm.waitPolling, the shm Endpoint being its
 * Poller and Sleeper, its cond "want notices have been handled". */
proctype Waiter()
{
	byte want;
	byte i = 0;
	byte d = 0;
	byte s = 0;
	byte kk = 0;
	bit did = 0;
	bit ok = 0;
	bit go = 0;

#ifdef NO_PROGRESS
	want = TOTAL;                   /* the only consumer: it takes them all */
#else
	select (want : 1 .. TOTAL);
#endif

	/* pollWait: cond(), p.Poll(), ... for a while */
	do
	:: taken >= want -> goto done                   /* cond() */
	:: else ->
		poll();
		if
		:: skip                                 /* poll again */
		:: break                                /* spin and pollYield are over */
		fi
	od;

	/* sleepWait */
	atomic { FENCED(WT) -> esl++ };                 /* c.sleepers.Add(1) */
	do
	::
#ifdef BUG_NO_LOOK
		poll();
		if
		:: taken >= want -> atomic { FENCED(WT) -> esl-- }; goto done
		:: else -> skip
		fi;
		prepare();
#else
		prepare();                              /* t := s.Prepare() */
		poll();                                 /* s.Poll() */
		if
		:: taken >= want ->                     /* if cond() { return nil } */
			atomic { FENCED(WT) -> sleepers-- };    /* deferred Cancel() */
			atomic { FENCED(WT) -> esl-- };         /* deferred c.sleepers.Add(-1) */
			goto done
		:: else -> skip
		fi;
		/* s.Sleep(t, d): if !e.pendingRacy() { futexSleep(&bell, t, d) } */
		if
		:: HELD(WT) -> go = 0                   /* pendingRacy: false while draining is held */
		:: else -> pending(WT, go)
		fi;
		if
		:: go -> go = 0
		:: else ->
#endif
			atomic {
				FENCED(WT) ->
				if
				:: rung[WT] == 0 -> asleep[WT] = 1
				:: else -> skip
				fi
			};
			asleep[WT] == 0;                /* no end label: a waiter must not sleep for ever */
#ifndef BUG_NO_LOOK
		fi;
#endif
		atomic { FENCED(WT) -> sleepers-- }     /* Sleep: hdr.sleepers.Add(-1) */
	od;
done:
	skip
}

#ifndef LIVE
/* Runs only when nothing else can move: every notice must have been
 * taken by then (one left in the ring with every consumer asleep or gone
 * is a lost wake-up). */
active proctype Final()
{
	timeout -> assert(taken == TOTAL)
}
#endif

init {
	byte i = 0;
	atomic {
		/* New: own.slots[i].seq.Store(i) (SLOTS is 2) */
		seq[0] = 0; seq[1] = 1;
		slsrc[0] = NONE; slsrc[1] = NONE;
		slk[0] = NONE; slk[1] = NONE;
		bdeq[PG] = NONE; bdeq[WT] = NONE;
		for (i : 0 .. NPROD - 1) { bseq[i] = NONE };
		i = 0;
		do
		:: i < NPROD -> run Producer(i); i++
		:: else -> break
		od;
#ifndef NO_TSO
		run Memory();
#endif
#ifndef NO_PROGRESS
		run Progress();
#endif
#ifndef NO_WAITER
		run Waiter()
#endif
	}
}

#ifdef LIVE
/* Every notice is eventually handled (checked under weak fairness). */
ltl all_taken { <> (taken == TOTAL) }
#endif
