/*
 * clock.c: the clocks and sleeping.
 *
 * The wall clock (CLOCK_REALTIME) stamps IDs; NTP and people step it.  The
 * monotonic clock (instr_time) measures waits and deadlines: nobody steps it,
 * so a deadline on it ends even when the wall clock jumps.  The boot clock
 * (CLOCK_BOOTTIME) is the monotonic clock plus the time the machine slept:
 * the clock watch compares the wall clock with it, so a suspend and resume is
 * not mistaken for a forward jump.  This file calls
 * nothing else of the extension and must never read shared memory.
 */
#include "postgres.h"

#include <sys/prctl.h>
#include <sys/timex.h>
#include <time.h>

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "snowflake.h"

/* Sleeps shorter than this use nanosleep; longer ones wait on the latch. */
#define SF_LATCH_MIN_NS		(2 * SF_NS_PER_MS)
/* The last stretch before the target is spun, so that no wake-up is late. */
#define SF_SPIN_NS			INT64CONST(20000)

/* A wait looks at the wall clock at least this often: it may step. */
#define SF_WAIT_LOOK_MS		100

static bool sf_timerslack_set = false;

/* Clock reads (wall and boot) by this backend; a test counts them per call. */
uint64		sf_clock_reads = 0;

/* sf_wall_ns(), the wall clock, is inline in snowflake.h: the hot path reads it. */

int64
sf_wall_unix_ms(void)
{
	return sf_wall_ns() / SF_NS_PER_MS;
}

int64
sf_mono_ns(void)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	return (int64) INSTR_TIME_GET_NANOSEC(now);
}

/*
 * Whether the kernel says a time service keeps the wall clock synchronized
 * (adjtimex, read only: no privilege).  After a boot, and after anyone sets
 * the clock by hand, the kernel reports it unsynchronized until a time
 * service (chrony, ntpd, systemd-timesyncd) has set and disciplined it.
 */
bool
sf_clock_synchronized(void)
{
	struct timex tx;
	int			state;

	memset(&tx, 0, sizeof(tx));
	state = adjtimex(&tx);
	return state != -1 && state != TIME_ERROR && (tx.status & STA_UNSYNC) == 0;
}

/* The boot clock, ns: never stepped, and it counts a suspended machine's sleep. */
int64
sf_boot_ns(void)
{
	struct timespec ts;

	sf_clock_reads++;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64) ts.tv_sec * INT64CONST(1000000000) + ts.tv_nsec;
}

/* Sleep for ns (short) without the latch; timer slack trimmed once per process. */
static void
sf_short_sleep(int64 ns)
{
	struct timespec ts;

	if (!sf_timerslack_set)
	{
		/* The default 50 us slack would make every ms boundary late. */
		(void) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
		sf_timerslack_set = true;
	}
	ts.tv_sec = 0;
	ts.tv_nsec = (long) ns;
	(void) nanosleep(&ts, NULL);
}

/*
 * Sleep until the wall clock reaches target_ns.  Returns false, at once, when
 * that cannot happen before deadline_ns (monotonic).  Ends on cancel,
 * statement timeout and postmaster death (CHECK_FOR_INTERRUPTS, the latch).
 * The clock is read again at least every SF_WAIT_LOOK_MS: a clock stepped
 * forward (corrected, or jumped) ends the wait then, not at its computed end.
 */
bool
sf_sleep_until(int64 target_ns, int64 deadline_ns)
{
	for (;;)
	{
		int64		need;

		CHECK_FOR_INTERRUPTS();

		need = target_ns - sf_wall_ns();
		if (need <= 0)
			return true;
		if (need > deadline_ns - sf_mono_ns())
			return false;

		if (need >= SF_LATCH_MIN_NS)
		{
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Min((long) (need / SF_NS_PER_MS) - 1, SF_WAIT_LOOK_MS),
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		else if (need > SF_SPIN_NS)
			sf_short_sleep(need - SF_SPIN_NS);
		else
			pg_spin_delay();
	}
}
