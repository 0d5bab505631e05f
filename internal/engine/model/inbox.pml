/*
 * inbox.pml: a Promela model of a window's notice inbox (internal/engine,
 * inbox.go and the direct path of notify.go) and of how its owner waits
 * for it on the transport's doorbell. README.md in this directory maps
 * the model to the Go code and says what is checked and how.
 *
 * Processes:
 *   Origin(o), o = 0..NPROD-1: a rank of the same host that sends K tag
 *     notices to the owner's window (splitDirect, pushDirect). Each
 *     notice goes straight into the inbox ring, in the owner's control
 *     region, when the origin may (nothing it sent through the transport
 *     waits for the owner's handlers, no overflow, a free slot), or else
 *     through the transport's notice queue.
 *   Progress: the owner's progress goroutine, which runs the handler of
 *     every notice the transport delivers (handleNotice: inbox.push): a
 *     claim in the ring, or the overflow buffer when the ring is full or
 *     the overflow not yet taken. It does not sleep here; its sleep on
 *     the doorbell is model/ring.pml's in internal/transport/shm.
 *   Owner: the window's owner, which activates a persistent notification
 *     request (AnySource, AnyTag, count 1) TOTAL times and, for each,
 *     tests it (testNotify: the match queue, the inbox, the transport
 *     through takeNotice) until it matches, sleeping on the doorbell
 *     (sleepWait) when it likes. Each matched notice must be the next one
 *     of its origin.
 *   Memory: the owner's release stores of its take counter becoming
 *     visible, one at a time, in order.
 *   Final: runs only once no other process can move (Promela's timeout)
 *     and asserts that every notice was matched.
 *
 * Memory model. sync/atomic operations and the handler's fenced publish
 * are sequentially consistent: one statement each. The owner's store of
 * its take counter (mem.StoreRelease64(&r.deq)) is a plain MOV on amd64
 * and may wait in its store buffer while its later loads go ahead; the
 * values it stores are consecutive, so the buffer is the range
 * (rdeq, odeq] and Memory makes them visible one by one. An origin's
 * publish of a slot (inboxSlot.publish, not fenced) waits in bseq[o]
 * until the origin itself makes it visible (pflush), its next locked
 * instruction does, or the owner's global barrier (membarrier) does,
 * which the owner runs after it registers as a sleeper and before its
 * last look. A thread reads its own buffered stores.
 *
 * Compile-time switches (spin -DNAME), each an injected bug that the
 * checker must report:
 *   BUG_NO_SENT_CHECK     an origin goes straight to the ring although
 *                         notices it sent through the transport are not
 *                         all placed yet (splitDirect without sent/handled)
 *   BUG_PLACED_EARLY      the handler counts a notice as placed before it
 *                         has placed it
 *   BUG_TAKE_DIRECT       takeNotice gives a notice polled from the
 *                         transport to the request although the inbox
 *                         still holds older ones (the code before 1d9916f)
 *   BUG_OVERFLOW_EARLY    the owner takes the overflow while a position
 *                         of the ring is claimed and not yet published
 *   BUG_NO_MEMBARRIER     the owner runs no barrier before its last look
 *   BUG_RING_EARLY        an origin looks at the waiters before its
 *                         publish (WakeRank before fill)
 * Other switches:
 *   NPROD, K              origins, notices per origin (defaults 3, 1)
 *   NO_OVER_RECHECK       claimInOrder does not look at the overflow flag
 *                         again after its claim (the code before 1d9916f)
 *   OVER_FIRST            an origin looks at the overflow flag before its
 *                         handled count (splitDirect looks at handled first)
 *                         (neither is reported: see README.md)
 *   NO_SLEEP              the owner never sleeps (no doorbell)
 *   FENCED_WAKE           a kernel without membarrier: WakeRank runs a
 *                         locked instruction before its look at the
 *                         waiters, and the owner runs no barrier
 *   SYNC_HANDLERS         the handler of a notice sent through the
 *                         transport runs on its origin's thread, at once:
 *                         handlers of different origins run concurrently
 *                         (with NO_DIRECT: ranks as goroutines of one
 *                         process, whose transport is no Waker)
 *   NO_DIRECT             origins never go straight to the ring
 *   LIVE                  check the LTL property all_taken under weak
 *                         fairness instead of running Final
 */

#ifndef NPROD
#define NPROD 3
#endif
#ifndef K
#define K 1
#endif
#define TOTAL (NPROD * K)
#define SLOTS 2                 /* inbox slots (a power of two) */

/* pos - head >= slots in uint64 arithmetic (pos < head wraps: "full") */
#define FULL(pos, head) ((pos) < (head) || (pos) - (head) >= SLOTS)

#define NONE 255                /* an empty slot field; an empty store buffer */
#define VOID 254                /* voidSrc: a claimed position given up */

/* inboxRing, in the owner's control region */
bit  over;                      /* r.over */
byte rdeq;                      /* r.deq, as memory holds it */
byte enq;                       /* r.enq */
byte seq[SLOTS];                /* slot.seq: pos+1 when it holds pos */
byte slsrc[SLOTS];              /* slot.src (plain) */
byte slk[SLOTS];                /* slot.tag (plain): here the notice's number at its origin */
byte handled[NPROD];            /* the handled counts, in the region: notices of o its handlers placed */

/* each origin's own */
byte sent[NPROD];               /* rankMaps.sent: notices sent through the transport */
byte oseen[NPROD];              /* rankMaps.seen: its copy of r.deq */
byte bseq[NPROD + 2];           /* a publish not yet visible (pos+1), or NONE (sized for every who: the last two unused) */

/* the owner's process */
byte odeq;                      /* inbox.deq: the owner's take counter (its own view of r.deq) */
byte hseen;                     /* inbox.seen: the handlers' copy of r.deq */
bit  draining;                  /* the transport's drain lock (shm Endpoint.draining) */
chan tq = [TOTAL] of { byte, byte };    /* the transport's notice queue, FIFO */
chan ovf = [TOTAL] of { byte, byte };   /* inbox.buf, the overflow */
chan mq = [TOTAL] of { byte, byte };    /* the window's match queue (w.mq) */
chan tmp = [TOTAL] of { byte, byte };   /* the overflow the owner took (takeUntil's got) */

/* the doorbell of the owner's rank (shm: hdr.waiters, hdr.bell, futex) */
byte waiters;                   /* hdr.waiters: the owner registered (its share of hdr.sleepers too) */
byte esl;                       /* Comm.sleepers (the engine's) */
bit  rung;                      /* hdr.bell changed since the owner's ticket */
bit  asleep;                    /* the owner is queued in futex_wait(&hdr.bell) */

/* the checker's bookkeeping */
byte got;                       /* notices matched */
byte nextk[NPROD];              /* next notice expected from each origin */
bit  matched;                   /* the current activation has its match */

#define OFENCED (rdeq == odeq)  /* the owner's store buffer is empty */

/* who runs an operation on the ring: origin o (0..NPROD-1), the
 * Progress goroutine, or the owner acting as a handler (takeNotice) */
#define PROGRESS NPROD
#define OWNER (NPROD + 1)

/* origin o's buffered publish becomes visible */
inline pflush(o) {
	atomic {
		if
		:: bseq[o] != NONE -> seq[(bseq[o] - 1) % SLOTS] = bseq[o]; bseq[o] = NONE
		:: else -> skip
		fi
	}
}

/* membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) by the owner (lastLook):
 * a system call, so its own buffer is empty first, and every origin's
 * buffered store is visible when it returns */
inline membarrier() {
#if !defined(BUG_NO_MEMBARRIER) && !defined(FENCED_WAKE)
	atomic {
		OFENCED ->
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

/* bell.Add(1); futexWakeAll(&bell) */
inline wake() {
	atomic { rung = 1; asleep = 0 }
}

/* WakeRank, and Endpoint.ring after a push into the transport's queue
 * (which looks at hdr.sleepers: the progress goroutine, which does not
 * sleep here, and the waiters) */
inline ring() {
	if
	:: waiters != 0 -> wake()
	:: else -> skip
	fi
}

/* a locked instruction by who waits for who's store buffer to empty */
inline fence(who) {
	if
	:: who < NPROD -> pflush(who)
	:: who == OWNER -> OFENCED
	:: who == PROGRESS -> skip
	fi
}

/* inboxRing.tryClaim by who, whose copy of deq is seen and whose view of
 * r.deq is rd: ok = 1 and pos claimed, or ok = 0 (full) */
inline tryClaim(seen, rd, who, pos, ok) {
	do
	:: pos = enq;                                   /* r.enq.Load() */
		if
		:: FULL(pos, seen) ->
			seen = rd;                      /* seen.Store(r.deq) */
			if
			:: FULL(pos, seen) -> ok = 0; break
			:: else -> skip
			fi
		:: else -> skip
		fi;
		fence(who);                             /* r.enq.CompareAndSwap(pos, pos+1) */
		atomic {
			if
			:: enq == pos -> enq = pos + 1; ok = 1
			:: else -> ok = 2
			fi
		};
		if
		:: ok == 1 -> break
		:: else -> skip                         /* another producer took pos */
		fi
	od
}

/* the slot of pos must be free: its previous notice taken */
#define FREE(pos) assert((pos) < odeq + SLOTS)

/* inboxRing.claimInOrder: tryClaim, unless the overflow flag is set
 * before the claim or once it is made (then a void fills the position) */
inline claimInOrder(seen, rd, who, pos, ok, fenced) {
	if
	:: over -> ok = 0
	:: else ->
		tryClaim(seen, rd, who, pos, ok);
#ifndef NO_OVER_RECHECK
		if
		:: ok && over -> FILL(who, pos, VOID, 0, fenced); ok = 0
		:: else -> skip
		fi
#endif
	fi
}

/* inboxRing.fill by who: by an origin a release store, into its store
 * buffer; by a handler fenced (mem.StoreFenced64: a plain store, then a
 * locked instruction), so sequentially consistent */
inline FILL(who, pos, s, kk, fenced) {
	if
	:: fenced -> fence(who)
	:: else -> skip
	fi;
	atomic {
		FREE(pos);
		slsrc[(pos) % SLOTS] = s;
		slk[(pos) % SLOTS] = kk;
		if
		:: fenced -> seq[(pos) % SLOTS] = (pos) + 1
		:: else -> bseq[who] = (pos) + 1
		fi
	}
}

/* inbox.placed */
#define PLACED(s) handled[s]++

/* inbox.push of notice (s, kk) by a handler: who is PROGRESS, or OWNER
 * in takeNotice; rd is its view of r.deq */
inline push(s, kk, who, rd, pos, ok) {
#ifdef BUG_PLACED_EARLY
	PLACED(s);
#endif
	claimInOrder(hseen, rd, who, pos, ok, 1);
	if
	:: ok -> FILL(who, pos, s, kk, 1)
	:: else ->
		fence(who);                                     /* mu.Lock */
		atomic { over = 1; ovf!s,kk }                   /* over.Store(1); append; mu.Unlock */
	fi;
#ifndef BUG_PLACED_EARLY
	PLACED(s);
#endif
	pos = 0; ok = 0
}

proctype Origin(byte me) {
	byte k, pos, ok;
	for (k : 0 .. K - 1) {
		/* splitDirect: straight into the ring (ok), or through the transport */
		ok = 0;
#if defined(NO_DIRECT)
		skip;
#elif !defined(OVER_FIRST)
		if
#ifndef BUG_NO_SENT_CHECK
		:: sent[me] != handled[me] -> skip
#endif
		:: else ->
			if
			:: over -> skip
			:: else -> skip; claimInOrder(oseen[me], rdeq, me, pos, ok, 0)
			fi
		fi;
#else /* OVER_FIRST */
		if
		:: over -> skip
		:: else ->
			if
			:: sent[me] != handled[me] -> skip
			:: else -> skip; claimInOrder(oseen[me], rdeq, me, pos, ok, 0)
			fi
		fi;
#endif
		if
		:: ok ->
			/* the data moves here; then pushDirect: fill and WakeRank */
#ifdef BUG_RING_EARLY
			ring();
			FILL(me, pos, me, k, 0);
			pflush(me)
#elif defined(FENCED_WAKE)
			FILL(me, pos, me, k, 0);
			pflush(me);                             /* WakeRank's locked instruction */
			ring()
#else
			FILL(me, pos, me, k, 0);
			if
			:: skip; pflush(me); ring()             /* the publish visible before the look at waiters, */
			:: skip; ring(); pflush(me)             /* or after it */
			fi
#endif
		:: else ->
			sent[me]++;
#ifndef SYNC_HANDLERS
			fence(me);                              /* the transport's push: a locked instruction */
			tq!me,k;
			ring()
#else
			/* the target's handler, on this origin's thread */
			push(me, k, me, rdeq, pos, ok);
			if                                      /* Comm.wake */
			:: esl > 0 -> wake()
			:: else -> skip
			fi
#endif
		fi;
		pos = 0; ok = 0
	}
}

proctype Progress() {
	byte s, kk, pos, ok;
end:
	do
	:: atomic { nempty(tq) && draining == 0 -> draining = 1; tq?s,kk };
		push(s, kk, PROGRESS, rdeq, pos, ok);
		/* Comm.wake */
		if
		:: esl > 0 -> wake()
		:: else -> skip
		fi;
		s = 0; kk = 0;
		draining = 0
	od
}

/* the request matches notice (s, kk): the next one of its origin */
inline deliver(s, kk) {
	assert(s < NPROD);
	assert(kk == nextk[s]);
	nextk[s]++;
	got++;
	matched = 1
}

/* drainFor's f: the request's match, else the match queue */
inline take1(s, kk) {
	if
	:: !matched -> deliver(s, kk)
	:: else -> mq!s,kk
	fi
}

/* inbox.drainFor (takeUntil with take1, which stops at the match) */
inline drainFor() {
	stop = 0;
	do
	:: atomic {
		seq[odeq % SLOTS] == odeq + 1 ->
		s = slsrc[odeq % SLOTS]; kk = slk[odeq % SLOTS];
		slsrc[odeq % SLOTS] = NONE; slk[odeq % SLOTS] = NONE
	   };
		odeq++;                         /* b.deq = deq; StoreRelease(&r.deq): buffered */
		if
		:: s == VOID -> skip
		:: else ->
			stop = !matched;
			take1(s, kk)
		fi;
		s = 0; kk = 0;
		if
		:: stop -> break
		:: else -> skip
		fi
	:: else -> break
	od;
	if
	:: !stop ->
		/* the overflow, only when the ring holds nothing, published or claimed */
		if
		:: over ->
#ifndef BUG_OVERFLOW_EARLY
			if
			:: odeq == enq ->
#else
			if
			:: true ->
#endif
				atomic {                /* mu.Lock; got := buf; over.Store(0); mu.Unlock */
					OFENCED -> over = 0;
					do
					:: ovf?s,kk -> tmp!s,kk
					:: empty(ovf) -> break
					od
				};
				do                      /* for _, e := range got { f(e) } */
				:: tmp?s,kk -> take1(s, kk)
				:: empty(tmp) -> break
				od;
				s = 0; kk = 0
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi;
	stop = 0
}

/* inbox.empty: nothing in the ring, published or claimed, and no overflow */
inline isEmpty(res) {
	res = (over == 0);
	res = res && (odeq == enq)
}

/* Win.takeNotice of notice (s, kk), polled from the transport by the
 * owner (draining held) while it tests its request */
inline takeNotice(s, kk) {
	drainFor();
	isEmpty(e);
#ifndef BUG_TAKE_DIRECT
	if
	:: !e ->
		/* older notices of its origin may be in the inbox: behind them */
		push(s, kk, OWNER, odeq, pos, ok)
	:: else ->
#else
	if
	:: true ->
#endif
		PLACED(s);
		take1(s, kk)
	fi;
	e = 0; s = 0; kk = 0
}

/* Request.testNotify, for an active request (matched == 0) */
inline test() {
	/* queued notices are older than those in the inbox */
	if
	:: mq?s,kk -> deliver(s, kk); s = 0; kk = 0
	:: empty(mq) -> skip
	fi;
	if
	:: !matched ->
		drainFor()
	:: else -> skip
	fi;
	if
	:: !matched ->
		/* PollNotices(takeNotice), while the request has no match and
		 * the transport has notices: the drain lock first (a locked
		 * instruction) */
		atomic { OFENCED && draining == 0 -> draining = 1 };
		do
		:: !matched && nempty(tq) -> tq?s2,kk2; takeNotice(s2, kk2); s2 = 0; kk2 = 0
		:: matched -> break
		:: empty(tq) -> break
		od;
		draining = 0;
		drainFor()
	:: else -> skip
	fi
}

proctype Owner() {
	byte s, kk, s2, kk2, pos, ok, i;
	bit stop, e;
	do
	:: got == TOTAL -> break
	:: else ->
		matched = 0;                    /* Start */
		test();
		if
		:: matched -> skip
		:: else ->
#ifndef NO_SLEEP
			if
			:: skip                 /* poll again (pollWait) */
			:: /* sleepWait: register, ticket, barrier, last look, sleep */
				atomic { OFENCED -> esl++ };                    /* c.sleepers.Add(1) */
				atomic { OFENCED -> waiters++; rung = 0 };      /* Prepare: sleepers.Add(1), waiters.Add(1); bell.Load() */
				membarrier();                                   /* lastLook */
				test();                                         /* s.Poll(); cond() */
				if
				:: matched -> skip
				:: else ->
					if
					:: nempty(tq) -> skip                   /* Sleep: pendingRacy */
					:: empty(tq) ->
						/* futex_wait(&bell, ticket): queued if the bell
						 * has not moved, and then until a wake */
						atomic {
							OFENCED ->
							if
							:: !rung -> asleep = 1
							:: else -> skip
							fi
						};
						asleep == 0
					fi
				fi;
				atomic { OFENCED -> waiters-- };                /* Cancel */
				atomic { OFENCED -> esl-- }
			fi
#else
			skip
#endif
		fi
	od
}

/* the owner's buffered stores of its take counter become visible */
proctype Memory() {
end:
	do
	:: atomic { rdeq != odeq -> rdeq++ }
	od
}

#ifndef LIVE
proctype Final() {
	timeout ->
	assert(got == TOTAL)
}
#else
ltl all_taken { <> (got == TOTAL) }
#endif

init {
	byte o;
	atomic {
		for (o : 0 .. NPROD - 1) {
			bseq[o] = NONE;
			run Origin(o)
		};
		for (o : 0 .. SLOTS - 1) {
			slsrc[o] = NONE;
			slk[o] = NONE
		};
		o = 0;
		run Progress();
		run Owner();
		run Memory()
#ifndef LIVE
		;
		run Final()
#endif
	}
}
