/*
 * A pool of worker threads for og_run (POSIX): threads made once and kept, instead of
 * created and joined on every call.
 *
 * Why: creating and joining a thread on every call cost a large share of a row copy;
 * torch's and ONNX Runtime's pools keep their threads spinning between calls, so back to
 * back their second core starts at once.  A worker here spins for OG_SPIN_NS after its
 * share (a call that follows within that time starts at once), yielding the core to any
 * other runnable thread after the first microseconds, then sleeps on its condition
 * variable: an idle process holds no busy core.  Waking a sleeping worker is slow (a
 * halted vCPU): the caller runs any share whose worker has not started once its own is
 * done.
 *
 * Interleaved with torch.gather (whose OpenMP workers spin too), pure spinning slowed
 * torch.gather; yielding keeps it as it was.  The figures: docs/performance.md, "The C
 * kernel".
 *
 * One caller at a time: a call that finds the pool busy (another Python thread inside a
 * kernel, the GIL being released) returns 0 and og_run creates its threads as before.
 * Workers block every signal (the calling thread keeps them: Ctrl-C reaches Python as
 * before) and never touch Python objects.  After fork() the child has no workers: an
 * atfork handler forgets them, and the child's first threaded call starts new ones.
 */
#define NO_IMPORT_ARRAY
#include "og_core.h"

#ifdef _WIN32

int
og_pool_run(og_work_fn fn, void *job, int nt)
{
    (void)fn;
    (void)job;
    (void)nt;
    return 0; /* Windows creates threads per call (og_run) */
}

#else

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OG_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define OG_PAUSE() __asm__ __volatile__("yield")
#else
#define OG_PAUSE() ((void)0)
#endif

/* Workers the pool keeps at most (the caller is thread 0); larger calls create the rest
 * per call.  The library asks for at most 8 (THREADS in _backends/_numpy/_threads.py). */
#define OG_POOL_MAX 31
/* How long a worker waits, spinning, for the next call before it sleeps: longer than the
 * Python between two of our calls under torch.compile, so the worker is still awake for
 * the next; short enough that calls interleaved with torch.gather (whose OpenMP workers
 * spin too) keep their times (the measurements: docs/performance.md, "The C kernel"). */
#define OG_SPIN_NS 500000

typedef struct {
    pthread_t th;
    pthread_cond_t cv;
    /* The call: written by the caller before `go`, read by the worker after it. */
    og_work_fn fn;
    void *job;
    int t, nt;
    unsigned go;    /* the worker's calls so far: a new value starts it */
    unsigned taken; /* the last call whose share someone claimed: the worker or caller */
    unsigned done;  /* the last call whose share the worker has finished */
    int sleeping;  /* under og_pool_lock */
} og_worker;

static pthread_mutex_t og_pool_busy = PTHREAD_MUTEX_INITIALIZER; /* one caller at a time */
static pthread_mutex_t og_pool_lock = PTHREAD_MUTEX_INITIALIZER; /* sleeping workers */
static og_worker og_workers[OG_POOL_MAX];
static int og_nworkers;
static int og_atfork_set;

static long long
og_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Claim the worker's share of its call `go`: 1 for the first to ask, the worker or the
 * caller, 0 for the other.  (Every call's share is claimed before the next call is
 * published, so `taken` is then go - 1.) */
static int
og_claim(og_worker *w, unsigned go)
{
    unsigned before = go - 1;
    return __atomic_compare_exchange_n(&w->taken, &before, go, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

static void *
og_worker_main(void *p)
{
    og_worker *w = (og_worker *)p;
    unsigned seen = 0;
    for (;;) {
        unsigned go = __atomic_load_n(&w->go, __ATOMIC_ACQUIRE);
        if (go == seen) {
            long long until = og_now_ns() + OG_SPIN_NS;
            int spins = 0;
            while ((go = __atomic_load_n(&w->go, __ATOMIC_ACQUIRE)) == seen) {
                if (++spins < 1024) {
                    OG_PAUSE();
                    continue;
                }
                /* Then yield at each look: another runnable thread on this core (torch's
                 * or BLAS's workers, which spin too) gets it, and a call still finds us
                 * within a microsecond. */
                sched_yield();
                if ((spins & 15) == 0 && og_now_ns() > until) break;
            }
            if (go == seen) {
                pthread_mutex_lock(&og_pool_lock);
                while ((go = __atomic_load_n(&w->go, __ATOMIC_ACQUIRE)) == seen) {
                    w->sleeping = 1;
                    pthread_cond_wait(&w->cv, &og_pool_lock);
                }
                w->sleeping = 0;
                pthread_mutex_unlock(&og_pool_lock);
            }
        }
        seen = go;
        if (og_claim(w, go)) { /* else the caller ran this share itself */
            w->fn(w->job, w->t, w->nt);
            __atomic_store_n(&w->done, go, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

/* In the child after fork(): the parent's workers do not exist here. */
static void
og_pool_forget(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    og_pool_busy = fresh;
    og_pool_lock = fresh;
    og_nworkers = 0;
}

/* Start workers until there are `want` (called holding og_pool_busy).  Returns how many
 * there are: fewer where a thread could not be created. */
static int
og_pool_grow(int want)
{
    sigset_t all, old;
    if (!og_atfork_set) {
        if (pthread_atfork(NULL, NULL, og_pool_forget) != 0) return og_nworkers;
        og_atfork_set = 1;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the workers inherit the blocked mask */
    while (og_nworkers < want) {
        og_worker *w = &og_workers[og_nworkers];
        w->go = w->taken = w->done = 0;
        w->sleeping = 0;
        if (pthread_cond_init(&w->cv, NULL) != 0) break;
        if (pthread_create(&w->th, NULL, og_worker_main, w) != 0) {
            pthread_cond_destroy(&w->cv);
            break;
        }
        pthread_detach(w->th);
        og_nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return og_nworkers;
}

/* Run fn(job, t, nt) for t in [0, nt) on the pool, t = 0 on the calling thread.  Returns
 * 1 when done, 0 (nothing run) when the pool is busy or cannot hold nt - 1 workers. */
int
og_pool_run(og_work_fn fn, void *job, int nt)
{
    int t, spins;
    if (nt - 1 > OG_POOL_MAX || pthread_mutex_trylock(&og_pool_busy) != 0) return 0;
    if (og_pool_grow(nt - 1) < nt - 1) {
        pthread_mutex_unlock(&og_pool_busy);
        return 0;
    }
    pthread_mutex_lock(&og_pool_lock);
    for (t = 1; t < nt; t++) {
        og_worker *w = &og_workers[t - 1];
        w->fn = fn;
        w->job = job;
        w->t = t;
        w->nt = nt;
        /* A number the worker has not seen: one more than its last (only callers, one
         * at a time, write `go`). */
        __atomic_store_n(&w->go, w->go + 1, __ATOMIC_RELEASE);
        if (w->sleeping) pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&og_pool_lock);
    fn(job, 0, nt);
    for (t = 1; t < nt; t++) {
        og_worker *w = &og_workers[t - 1];
        if (og_claim(w, w->go)) {
            /* Not started yet: a sleeping worker's wake-up (a halted vCPU) can take longer
             * than the share; the caller runs it, so a call costs at most about what one
             * thread takes. */
            fn(job, t, nt);
            continue;
        }
        spins = 0;
        while (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) != w->go) {
            /* Shares are even, so the wait is short; yield when it is not (more threads
             * than free cores). */
            if (++spins < 4096) OG_PAUSE();
            else sched_yield();
        }
    }
    pthread_mutex_unlock(&og_pool_busy);
    return 1;
}

#endif
