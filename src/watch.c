/*
 * watch.c: the clock's health: whether the wall clock stepped forward, and
 * the time that generation and the durable mark may trust.
 *
 * The wall clock's offset from the boot clock (wall - boot) stays put while
 * both run, drifts slowly under NTP slewing, drops when the clock is stepped
 * back and rises when it is stepped forward.  The trusted offset (clock_base)
 * is the highest offset accepted so far.  A look that finds the offset more
 * than snowflake.max_clock_jump_ms above it holds generation: no ID is issued,
 * and the mark is sized from the trusted time (boot clock + base), never from
 * the jumped wall clock.  A smaller rise is taken in at once, so a correction
 * within the tolerance passes silently, and drift cannot pile up while the
 * server runs: the reservation writer looks at least every half window.  A
 * step back lowers nothing: the rollback logic of generator.c deals with it,
 * and a later step forward that only brings the clock back is no jump.  The
 * hold ends by itself when the clock comes back within the tolerance, or when
 * an operator accepts the new time (snowflake_accept_clock()).
 *
 * A jump while the server is down cannot be seen: the boot clock restarts
 * with the machine, and downtime looks the same as a jump.  Only a hold is
 * carried across a restart (mark.c records it in the state file, with the
 * trusted time): the next start trusts that time plus the time since start.
 *
 * Lock-free: compare-and-swap on shared atomics; the one process whose swap
 * begins or ends a hold writes its WARNING.  This file may call clock.c and
 * shmem.c; it never writes files, never sleeps and never takes a lock.
 */
#include "postgres.h"

#include "snowflake.h"

/* Rises of the offset below this are jitter: the base is not rewritten for them. */
#define SF_WATCH_SLACK_NS	SF_NS_PER_MS

/* The tolerance in ns, or 0 when the check is off. */
static inline int64
sf_watch_tolerance_ns(void)
{
	return (int64) sf_max_clock_jump_ms * SF_NS_PER_MS;
}

/*
 * Look at the clock (wall_ns, just read by the caller).  Sets *held_ms to the
 * forward jump that holds generation, or 0.  Returns whether this look began
 * or ended a hold, so that the caller records it (sf_mark_record_hold()).
 */
SnowflakeWatchEvent
sf_watch_look(int64 wall_ns, int64 *held_ms)
{
	int64		offset = wall_ns - sf_boot_ns();
	int64		tolerance = sf_watch_tolerance_ns();
	uint64		base = pg_atomic_read_u64(&sf_shared->clock_base);
	uint64		held;
	int64		step;

	*held_ms = 0;

	/* The first look since start-up trusts the clock as it is. */
	if (unlikely(base == 0) &&
		pg_atomic_compare_exchange_u64(&sf_shared->clock_base, &base, (uint64) offset))
		base = (uint64) offset;

	step = offset - (int64) base;
	if (unlikely(step > SF_WATCH_SLACK_NS))
	{
		uint64		max = pg_atomic_read_u64(&sf_shared->clock_max_jump);
		uint64		step_ms = (uint64) (step / SF_NS_PER_MS);

		while (step_ms > max &&
			   !pg_atomic_compare_exchange_u64(&sf_shared->clock_max_jump, &max, step_ms))
			;

		if (tolerance == 0 || step <= tolerance)
		{
			/* Within the tolerance: the trusted offset follows the clock. */
			while ((uint64) offset > base &&
				   !pg_atomic_compare_exchange_u64(&sf_shared->clock_base, &base, (uint64) offset))
				;
		}
		else
			*held_ms = Max(step_ms, 1);
	}

	held = pg_atomic_read_u64(&sf_shared->clock_held);
	if (likely((*held_ms != 0) == (held != 0)))
		return SF_WATCH_SAME;

	if (*held_ms != 0)
	{
		if (!pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, (uint64) *held_ms))
			return SF_WATCH_SAME;
		ereport(WARNING,
				(errmsg("snowflake: the system clock jumped %lld ms forward, more than snowflake.max_clock_jump_ms (%d ms): "
						"generation is held at the old time until the clock comes back or a superuser runs snowflake_accept_clock()",
						(long long) *held_ms, sf_max_clock_jump_ms)));
		return SF_WATCH_HELD;
	}

	if (!pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, 0))
		return SF_WATCH_SAME;
	ereport(WARNING,
			(errmsg("snowflake: the system clock came back within snowflake.max_clock_jump_ms (%d ms) of the time trusted before its %lld ms jump: generation resumes",
					sf_max_clock_jump_ms, (long long) held)));
	return SF_WATCH_RELEASED;
}

/*
 * The time, in Unix ms, that the durable mark may be sized from: the wall
 * clock, unless it is more than the tolerance ahead of the trusted time; then
 * the trusted time.  Changes nothing.
 */
int64
sf_watch_trusted_ms(void)
{
	int64		wall_ns = sf_wall_ns();
	int64		tolerance = sf_watch_tolerance_ns();
	uint64		base = pg_atomic_read_u64(&sf_shared->clock_base);
	int64		trusted_ns;

	if (base == 0 || tolerance == 0)
		return wall_ns / SF_NS_PER_MS;
	trusted_ns = (int64) base + sf_boot_ns();
	if (wall_ns - trusted_ns > tolerance)
		return trusted_ns / SF_NS_PER_MS;
	return wall_ns / SF_NS_PER_MS;
}

/*
 * An operator accepts the clock as it is now: the trusted offset becomes the
 * current one, and a hold ends.  Returns how many ms the trusted time moved
 * forward (0 if none).  The caller records the end of a hold.
 */
int64
sf_watch_accept(void)
{
	int64		offset = sf_wall_ns() - sf_boot_ns();
	uint64		old = pg_atomic_exchange_u64(&sf_shared->clock_base, (uint64) offset);
	uint64		held = pg_atomic_read_u64(&sf_shared->clock_held);
	int64		moved = old == 0 ? 0 : Max(offset - (int64) old, 0) / SF_NS_PER_MS;

	if (held != 0 && pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, 0))
		ereport(WARNING,
				(errmsg("snowflake: the system clock's %lld ms forward jump was accepted with snowflake_accept_clock(): generation resumes at the new time",
						(long long) held)));
	return moved;
}

/*
 * Fresh shared memory (postmaster, at start-up and after a crash): no hold,
 * and the first look trusts the clock; unless the state file records a hold,
 * whose trusted time (clock_seen_ms) is trusted again, plus the time since
 * now, or the clock is behind that time (it went back while the server was
 * down), when that time is trusted too: its correction is no jump.  A clock far ahead of the file's time is only logged: downtime and a
 * jump while the server was down look the same.
 */
void
sf_watch_startup(SnowflakeShared *shared, bool held, int64 clock_seen_ms)
{
	pg_atomic_write_u64(&shared->clock_held, 0);
	pg_atomic_write_u32(&shared->clock_held_recorded, held ? 1 : 0);
	pg_atomic_write_u64(&shared->clock_max_jump, 0);
	pg_atomic_write_u64(&shared->clock_base, 0);

	if (held && clock_seen_ms > 0)
	{
		pg_atomic_write_u64(&shared->clock_base,
							(uint64) (clock_seen_ms * SF_NS_PER_MS - sf_boot_ns()));
		ereport(LOG,
				(errmsg("snowflake: the state file records generation held for a forward clock jump; "
						"the time trusted then (Unix ms " INT64_FORMAT ") is trusted again",
						clock_seen_ms)));
	}
	else if (clock_seen_ms > sf_wall_unix_ms())
	{
		/*
		 * The clock is behind the time the state file was written at: it went
		 * back while the server was down.  Trust that time, so that the clock's
		 * correction forward, back to it, is no jump.
		 */
		pg_atomic_write_u64(&shared->clock_base,
							(uint64) (clock_seen_ms * SF_NS_PER_MS - sf_boot_ns()));
	}
	else if (sf_max_clock_jump_ms > 0 && clock_seen_ms > 0 &&
			 sf_wall_unix_ms() - clock_seen_ms > sf_max_clock_jump_ms)
		ereport(LOG,
				(errmsg("snowflake: the system clock is " INT64_FORMAT " ms ahead of the time the state file was last written; "
						"downtime and a forward jump while the server was down look the same, so the clock is trusted as it is",
						sf_wall_unix_ms() - clock_seen_ms)));
}
