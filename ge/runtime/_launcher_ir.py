"""The native launcher's pool at machine level: the layout of its shared record, the
protocol its threads follow, and the LLVM IR of the pool functions (``ge_launch``,
``ge_run_tasks``, the workers' loop). ``ge.runtime._launcher`` fills in the per-machine
details, compiles it (or loads it from the code cache) and drives it from Python.
"""

from __future__ import annotations

_SPIN_US = 50  # how long an idle thread spins before it sleeps in the kernel
# a launch or run of tasks that found the workers pinned for another CPU runs nothing and
# returns _MOVED_BASE - cpu, far below any status (an i32) or task count
_MOVED_BASE = -(1 << 40)
_MOVED = -(1 << 39)

# (futex, sched_yield) syscall numbers and the spin-wait hint, per machine
_TARGETS = {
    "x86_64": (202, 24, "call void @llvm.x86.sse2.pause()", "declare void @llvm.x86.sse2.pause()"),
    "aarch64": (
        98,
        124,
        "call void @llvm.aarch64.hint(i32 1)",
        "declare void @llvm.aarch64.hint(i32)",
    ),
}

# The pool record, in int64 slots. Each field that threads write sits on its own 64-byte line.
_CFG_SYSCALL, _CFG_CLOCK, _CFG_WORKERS, _CFG_SPIN_NS = 0, 1, 2, 3  # set once, read-only
_CFG_GETCPU, _PLACED_FOR = 4, 5  # sched_getcpu (0: workers not pinned); the CPU they sit for
_POOL_SLOTS = 80  # gen 8, sleepers 16, job 24-26, next 32, done 40, fin 48/49, status 56,
#                   active 64, mutex 72: the offsets are written out in the IR below

# Protocol (every launch under the mutex, by the one thread holding it):
#   gen (i32, even = a job is published, odd = the job slot is being rewritten) is the futex
#   word workers wait on. A launch stores gen+1 (odd), waits until `active` is 0, writes the
#   job and zeroes next/done/fin/status, stores gen+2 (even), and wakes sleepers if any.
#   A worker that sees a new even gen increments `active`, then re-reads gen: if it changed,
#   it backs off, else it owns a view of that job until it decrements `active`. The two
#   seq_cst store-then-load pairs (launch: gen then active; worker: active then gen) make sure
#   no worker reads a job slot that is being rewritten, nor touches the counters of a later
#   job. The sleepers count and the caller's `cwait` flag use the same pairing against
#   lost wake-ups. The thread that completes the last block stores fin = 1 (release), which
#   the caller's acquire load pairs with: every block's writes happen before launch returns.
_IR = r"""
@@PAUSE_DECL@@

define internal void @relax() {
  @@PAUSE@@
  ret void
}

define internal i64 @now_ns(ptr %pool) {
  %ts = alloca [2 x i64], align 8
  %fpp = getelementptr inbounds i64, ptr %pool, i64 1
  %fp = load ptr, ptr %fpp, align 8
  %r = call i32 %fp(i32 1, ptr %ts)
  %s = load i64, ptr %ts, align 8
  %nsp = getelementptr inbounds i64, ptr %ts, i64 1
  %ns = load i64, ptr %nsp, align 8
  %sns = mul i64 %s, 1000000000
  %t = add i64 %sns, %ns
  ret i64 %t
}

; true once a spin that began at %start (turn 0) has lasted the pool's spin budget; reads the
; clock every 64 turns only
define internal i1 @spin_over(ptr %pool, i64 %turn, i64 %start) {
entry:
  %low = and i64 %turn, 63
  %check = icmp eq i64 %low, 63
  br i1 %check, label %clock, label %no
no:
  ret i1 false
clock:
  %t = call i64 @now_ns(ptr %pool)
  %elapsed = sub i64 %t, %start
  %bp = getelementptr inbounds i64, ptr %pool, i64 3
  %budget = load i64, ptr %bp, align 8
  %over = icmp sge i64 %elapsed, %budget
  ret i1 %over
}

define internal void @futex_wait(ptr %pool, ptr %addr, i32 %val) {
  %fp = load ptr, ptr %pool, align 8
  %v = zext i32 %val to i64
  %r = call i64 (i64, ...) %fp(i64 @@FUTEX@@, ptr %addr, i64 128, i64 %v, ptr null, ptr null, i64 0)
  ret void
}

define internal void @futex_wake(ptr %pool, ptr %addr, i64 %n) {
  %fp = load ptr, ptr %pool, align 8
  %r = call i64 (i64, ...) %fp(i64 @@FUTEX@@, ptr %addr, i64 129, i64 %n, ptr null, ptr null, i64 0)
  ret void
}

define internal void @yield_cpu(ptr %pool) {
  %fp = load ptr, ptr %pool, align 8
  %r = call i64 (i64, ...) %fp(i64 @@YIELD@@)
  ret void
}

; --- the launch mutex (0 free, 1 held, 2 held and someone may sleep on it) --------------------
define internal void @lock(ptr %pool) {
entry:
  %m = getelementptr inbounds i64, ptr %pool, i64 72
  %turn = alloca i64, align 8
  %start = alloca i64, align 8
  %r = cmpxchg ptr %m, i32 0, i32 1 acquire monotonic, align 4
  %ok = extractvalue { i32, i1 } %r, 1
  br i1 %ok, label %done, label %slow
slow:
  store i64 0, ptr %turn, align 8
  %t0 = call i64 @now_ns(ptr %pool)
  store i64 %t0, ptr %start, align 8
  br label %spin
spin:
  call void @relax()
  %c = load atomic i32, ptr %m monotonic, align 4
  %free = icmp eq i32 %c, 0
  br i1 %free, label %try, label %next
try:
  %r2 = cmpxchg ptr %m, i32 0, i32 1 acquire monotonic, align 4
  %ok2 = extractvalue { i32, i1 } %r2, 1
  br i1 %ok2, label %done, label %next
next:
  %k = load i64, ptr %turn, align 8
  %k1 = add i64 %k, 1
  store i64 %k1, ptr %turn, align 8
  %s = load i64, ptr %start, align 8
  %over = call i1 @spin_over(ptr %pool, i64 %k1, i64 %s)
  br i1 %over, label %sleep, label %spin
sleep:
  %x = atomicrmw xchg ptr %m, i32 2 acquire, align 4
  %got = icmp eq i32 %x, 0
  br i1 %got, label %done, label %wait
wait:
  call void @futex_wait(ptr %pool, ptr %m, i32 2)
  br label %sleep
done:
  ret void
}

define internal void @unlock(ptr %pool) {
entry:
  %m = getelementptr inbounds i64, ptr %pool, i64 72
  %old = atomicrmw xchg ptr %m, i32 0 release, align 4
  %contended = icmp eq i32 %old, 2
  br i1 %contended, label %wake, label %done
wake:
  call void @futex_wake(ptr %pool, ptr %m, i64 1)
  br label %done
done:
  ret void
}

; --- running blocks ----------------------------------------------------------------------------
; Takes blocks of the published job until none is left; the thread that completes the last
; block sets fin and wakes the caller if it sleeps.
define internal void @run_blocks(ptr %pool, ptr %fn, i64 %dim, ptr %args) {
entry:
  %nextp = getelementptr inbounds i64, ptr %pool, i64 32
  %donep = getelementptr inbounds i64, ptr %pool, i64 40
  %finp = getelementptr inbounds i64, ptr %pool, i64 48
  %cwaitp = getelementptr inbounds i64, ptr %pool, i64 49
  %statusp = getelementptr inbounds i64, ptr %pool, i64 56
  br label %take
take:
  %n = phi i64 [ 0, %entry ], [ %n1, %counted ]
  %b = atomicrmw add ptr %nextp, i64 1 monotonic, align 8
  %more = icmp ult i64 %b, %dim
  br i1 %more, label %block, label %out
block:
  %st = load atomic i32, ptr %statusp monotonic, align 4
  %healthy = icmp eq i32 %st, 0
  br i1 %healthy, label %call, label %counted
call:
  %s = call i32 %fn(i64 %b, i64 %dim, ptr %args)
  %bad = icmp ne i32 %s, 0
  br i1 %bad, label %record, label %counted
record:
  %rec = cmpxchg ptr %statusp, i32 0, i32 %s monotonic monotonic, align 4
  br label %counted
counted:
  %n1 = add i64 %n, 1
  br label %take
out:
  %none = icmp eq i64 %n, 0
  br i1 %none, label %done, label %publish
publish:
  %old = atomicrmw add ptr %donep, i64 %n acq_rel, align 8
  %total = add i64 %old, %n
  %last = icmp eq i64 %total, %dim
  br i1 %last, label %finish, label %done
finish:
  store atomic i32 1, ptr %finp seq_cst, align 4
  %cw = load atomic i32, ptr %cwaitp seq_cst, align 4
  %sleeping = icmp ne i32 %cw, 0
  br i1 %sleeping, label %wake, label %done
wake:
  call void @futex_wake(ptr %pool, ptr %finp, i64 1)
  br label %done
done:
  ret void
}

; gen is a job this worker has not seen yet (even: published, odd: being rewritten)
define internal i1 @fresh(i32 %g, i32 %seen) {
  %low = and i32 %g, 1
  %even = icmp eq i32 %low, 0
  %new = icmp ne i32 %g, %seen
  %yes = and i1 %even, %new
  ret i1 %yes
}

define void @ge_worker_main(ptr %pool, i64 %id) {
entry:
  %genp = getelementptr inbounds i64, ptr %pool, i64 8
  %sleepp = getelementptr inbounds i64, ptr %pool, i64 16
  %fnp = getelementptr inbounds i64, ptr %pool, i64 24
  %dimp = getelementptr inbounds i64, ptr %pool, i64 25
  %argsp = getelementptr inbounds i64, ptr %pool, i64 26
  %activep = getelementptr inbounds i64, ptr %pool, i64 64
  %seen = alloca i32, align 4
  %turn = alloca i64, align 8
  %start = alloca i64, align 8
  store i32 0, ptr %seen, align 4
  br label %wait
wait:
  %s0 = load i32, ptr %seen, align 4
  %g0 = load atomic i32, ptr %genp acquire, align 4
  %r0 = call i1 @fresh(i32 %g0, i32 %s0)
  br i1 %r0, label %enter, label %spin_start
spin_start:
  store i64 0, ptr %turn, align 8
  %t0 = call i64 @now_ns(ptr %pool)
  store i64 %t0, ptr %start, align 8
  br label %spin
spin:
  call void @relax()
  %g1 = load atomic i32, ptr %genp acquire, align 4
  %r1 = call i1 @fresh(i32 %g1, i32 %s0)
  br i1 %r1, label %enter, label %spin_next
spin_next:
  %k = load i64, ptr %turn, align 8
  %k1 = add i64 %k, 1
  store i64 %k1, ptr %turn, align 8
  %st = load i64, ptr %start, align 8
  %over = call i1 @spin_over(ptr %pool, i64 %k1, i64 %st)
  br i1 %over, label %sleep, label %spin
sleep:
  %x = atomicrmw add ptr %sleepp, i64 1 seq_cst, align 8
  %g2 = load atomic i32, ptr %genp seq_cst, align 4
  %r2 = call i1 @fresh(i32 %g2, i32 %s0)
  br i1 %r2, label %awake, label %futex
futex:
  call void @futex_wait(ptr %pool, ptr %genp, i32 %g2)
  br label %awake
awake:
  %y = atomicrmw sub ptr %sleepp, i64 1 seq_cst, align 8
  br label %wait
enter:
  %g = phi i32 [ %g0, %wait ], [ %g1, %spin ]
  %a = atomicrmw add ptr %activep, i64 1 seq_cst, align 8
  %g3 = load atomic i32, ptr %genp seq_cst, align 4
  %same = icmp eq i32 %g3, %g
  br i1 %same, label %work, label %back_off
back_off:
  %a2 = atomicrmw sub ptr %activep, i64 1 seq_cst, align 8
  br label %wait
work:
  store i32 %g, ptr %seen, align 4
  %fn = load ptr, ptr %fnp, align 8
  %dim = load i64, ptr %dimp, align 8
  %args = load ptr, ptr %argsp, align 8
  call void @run_blocks(ptr %pool, ptr %fn, i64 %dim, ptr %args)
  %a3 = atomicrmw sub ptr %activep, i64 1 seq_cst, align 8
  br label %wait
}

; waits until no worker holds a view of the job slot (they leave within a few instructions,
; unless descheduled: then yield the CPU to them)
define internal void @drain(ptr %pool) {
entry:
  %activep = getelementptr inbounds i64, ptr %pool, i64 64
  br label %check
check:
  %k = phi i64 [ 0, %entry ], [ %k1, %give ], [ %k1, %hint ]
  %a = load atomic i64, ptr %activep seq_cst, align 8
  %idle = icmp eq i64 %a, 0
  br i1 %idle, label %done, label %relax
relax:
  %k1 = add i64 %k, 1
  %low = and i64 %k1, 1023
  %often = icmp eq i64 %low, 0
  br i1 %often, label %give, label %hint
give:
  call void @yield_cpu(ptr %pool)
  br label %check
hint:
  call void @relax()
  br label %check
done:
  ret void
}

define internal void @await_fin(ptr %pool) {
entry:
  %finp = getelementptr inbounds i64, ptr %pool, i64 48
  %cwaitp = getelementptr inbounds i64, ptr %pool, i64 49
  %turn = alloca i64, align 8
  %start = alloca i64, align 8
  %f0 = load atomic i32, ptr %finp acquire, align 4
  %d0 = icmp ne i32 %f0, 0
  br i1 %d0, label %done, label %spin_start
spin_start:
  store i64 0, ptr %turn, align 8
  %t0 = call i64 @now_ns(ptr %pool)
  store i64 %t0, ptr %start, align 8
  br label %spin
spin:
  call void @relax()
  %f1 = load atomic i32, ptr %finp acquire, align 4
  %d1 = icmp ne i32 %f1, 0
  br i1 %d1, label %done, label %spin_next
spin_next:
  %k = load i64, ptr %turn, align 8
  %k1 = add i64 %k, 1
  store i64 %k1, ptr %turn, align 8
  %st = load i64, ptr %start, align 8
  %over = call i1 @spin_over(ptr %pool, i64 %k1, i64 %st)
  br i1 %over, label %sleep, label %spin
sleep:
  store atomic i32 1, ptr %cwaitp seq_cst, align 4
  %f2 = load atomic i32, ptr %finp seq_cst, align 4
  %d2 = icmp ne i32 %f2, 0
  br i1 %d2, label %woke, label %futex
futex:
  call void @futex_wait(ptr %pool, ptr %finp, i32 0)
  br label %sleep
woke:
  store atomic i32 0, ptr %cwaitp monotonic, align 4
  br label %done
done:
  ret void
}

define i32 @ge_launch(ptr %pool, ptr %fn, i64 %dim, ptr %args) {
entry:
  %few = icmp sle i64 %dim, 1
  br i1 %few, label %small, label %many
small:
  %one = icmp eq i64 %dim, 1
  br i1 %one, label %single, label %nothing
nothing:
  ret i32 0
single:
  %s1 = call i32 %fn(i64 0, i64 1, ptr %args)
  ret i32 %s1
many:
  %nwp = getelementptr inbounds i64, ptr %pool, i64 2
  %nw = load i64, ptr %nwp, align 8
  %alone = icmp eq i64 %nw, 0
  br i1 %alone, label %inline, label %pooled
inline:
  %b = phi i64 [ 0, %many ], [ %b1, %inline_ok ]
  %si = call i32 %fn(i64 %b, i64 %dim, ptr %args)
  %bad = icmp ne i32 %si, 0
  br i1 %bad, label %inline_fail, label %inline_ok
inline_fail:
  ret i32 %si
inline_ok:
  %b1 = add i64 %b, 1
  %more = icmp slt i64 %b1, %dim
  br i1 %more, label %inline, label %nothing
pooled:
  %genp = getelementptr inbounds i64, ptr %pool, i64 8
  %sleepp = getelementptr inbounds i64, ptr %pool, i64 16
  %fnp = getelementptr inbounds i64, ptr %pool, i64 24
  %dimp = getelementptr inbounds i64, ptr %pool, i64 25
  %argsp = getelementptr inbounds i64, ptr %pool, i64 26
  %nextp = getelementptr inbounds i64, ptr %pool, i64 32
  %donep = getelementptr inbounds i64, ptr %pool, i64 40
  %finp = getelementptr inbounds i64, ptr %pool, i64 48
  %statusp = getelementptr inbounds i64, ptr %pool, i64 56
  call void @lock(ptr %pool)
  %g = load atomic i32, ptr %genp monotonic, align 4
  %godd = add i32 %g, 1
  store atomic i32 %godd, ptr %genp seq_cst, align 4
  call void @drain(ptr %pool)
  store ptr %fn, ptr %fnp, align 8
  store i64 %dim, ptr %dimp, align 8
  store ptr %args, ptr %argsp, align 8
  store atomic i64 0, ptr %nextp monotonic, align 8
  store atomic i64 0, ptr %donep monotonic, align 8
  store atomic i32 0, ptr %finp monotonic, align 4
  store atomic i32 0, ptr %statusp monotonic, align 4
  %gnew = add i32 %g, 2
  store atomic i32 %gnew, ptr %genp seq_cst, align 4
  %sl = load atomic i64, ptr %sleepp seq_cst, align 8
  %anyone = icmp ne i64 %sl, 0
  br i1 %anyone, label %wake, label %run
wake:
  %want = sub i64 %dim, 1
  %less = icmp ult i64 %want, %nw
  %n = select i1 %less, i64 %want, i64 %nw
  call void @futex_wake(ptr %pool, ptr %genp, i64 %n)
  br label %run
run:
  call void @run_blocks(ptr %pool, ptr %fn, i64 %dim, ptr %args)
  call void @await_fin(ptr %pool)
  %status = load atomic i32, ptr %statusp monotonic, align 4
  call void @unlock(ptr %pool)
  ret i32 %status
}

; -2 while the workers sit right for the calling thread's CPU, else that CPU (sched_getcpu, at
; config slot 4, is null where the workers are not pinned; slot 5 is the CPU they sit for)
define internal i64 @moved(ptr %pool) {
entry:
  %gp = getelementptr inbounds i64, ptr %pool, i64 4
  %g = load ptr, ptr %gp, align 8
  %none = icmp eq ptr %g, null
  br i1 %none, label %stay, label %ask
ask:
  %c = call i32 %g()
  %cpu = sext i32 %c to i64
  %pp = getelementptr inbounds i64, ptr %pool, i64 5
  %placed = load atomic i64, ptr %pp monotonic, align 8
  %same = icmp eq i64 %cpu, %placed
  br i1 %same, label %stay, label %away
stay:
  ret i64 -2
away:
  ret i64 %cpu
}

; ge_launch, unless the workers must be re-pinned first: then nothing runs and the result is
; MOVED_BASE - cpu (below any i32 status), for the caller to pin them and call again
define i64 @ge_launch_placed(ptr %pool, ptr %fn, i64 %dim, ptr %args) {
entry:
  %many = icmp sgt i64 %dim, 1
  br i1 %many, label %check, label %go
check:
  %m = call i64 @moved(ptr %pool)
  %stay = icmp eq i64 %m, -2
  br i1 %stay, label %go, label %tell
tell:
  %code = sub i64 @@MOVED_BASE@@, %m
  ret i64 %code
go:
  %s = call i32 @ge_launch(ptr %pool, ptr %fn, i64 %dim, ptr %args)
  %w = sext i32 %s to i64
  ret i64 %w
}

; ge_run_tasks, with the same re-pinning check first
define i64 @ge_run_tasks_placed(ptr %pool, ptr %table, i64 %count) {
entry:
  %m = call i64 @moved(ptr %pool)
  %stay = icmp eq i64 %m, -2
  br i1 %stay, label %go, label %tell
tell:
  %code = sub i64 @@MOVED_BASE@@, %m
  ret i64 %code
go:
  %r = call i64 @ge_run_tasks(ptr %pool, ptr %table, i64 %count)
  ret i64 %r
}

define i64 @ge_run_tasks(ptr %pool, ptr %table, i64 %count) {
entry:
  %empty = icmp sle i64 %count, 0
  br i1 %empty, label %ok, label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %next ]
  %base = mul i64 %k, 3
  %fnp = getelementptr inbounds i64, ptr %table, i64 %base
  %fn = load ptr, ptr %fnp, align 8
  %dimp = getelementptr inbounds i64, ptr %fnp, i64 1
  %dim = load i64, ptr %dimp, align 8
  %argsp = getelementptr inbounds i64, ptr %fnp, i64 2
  %args = load ptr, ptr %argsp, align 8
  %s = call i32 @ge_launch(ptr %pool, ptr %fn, i64 %dim, ptr %args)
  %failed = icmp ne i32 %s, 0
  %k1 = add i64 %k, 1
  br i1 %failed, label %fail, label %next
next:
  %more = icmp slt i64 %k1, %count
  br i1 %more, label %loop, label %ok
fail:
  ret i64 %k1
ok:
  ret i64 0
}
"""
