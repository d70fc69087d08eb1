/*
 * watch.c: the clock's health: whether the wall clock stepped forward, and
 * the time that generation and the durable mark may trust.
 *
 * The wall clock's offset from the boot clock (wall - boot) stays put while
 * both run (NTP slewing moves both alike), drops when the clock is stepped
 * back and rises when it is stepped forward.  The trusted offset (clock_base)
 * is fixed when the watch arms, and moves only up, and only when an operator
 * accepts the clock (snowflake_accept_clock()).  The watch's invariants
 * (docs/clock.md):
 *
 *  W1 Cumulative: a look holds generation when the offset is more than
 *     snowflake.max_clock_jump_ms above the trusted offset, however many
 *     smaller steps brought it there.  Exactly the tolerance is no jump (whole
 *     ms are compared).  The trusted offset never follows a rise by itself.
 *  W2 No ID, and no durable mark, lies more than the tolerance beyond the
 *     trusted time (boot clock + trusted offset): each call decides from its
 *     own clock read, never from a flag another process set.
 *  W3 Restarts and crashes on the same boot keep the trusted offset (the state
 *     file records it with the kernel's boot_id): a jump while the server was
 *     down is held at start, and a correction of a clock that was behind is
 *     no jump.
 *  W4 A hold begins and ends on a fresh reading of both clocks, by the one
 *     process whose compare-and-swap changes it: one WARNING each.
 *  W5 Before it arms, the watch follows the clock up: after a reboot (or in a
 *     new cluster) it arms at the first generating call that finds the clock
 *     plausible (past the epoch and past the state file's time).  A clock
 *     that is behind at start is corrected without a hold.
 *  W6 Accepting the clock never lowers the trusted offset.
 *  W7 The first synchronization by a time service is a correction: when the
 *     watch arms (W5) while the kernel reports the clock unsynchronized (after
 *     a boot no time service has synchronized it yet), the lead the clock has
 *     over the trusted time once the kernel reports it synchronized is taken
 *     in, and a hold for it ends, once; from then on steps are held as W1
 *     says.  The writer looks every second (W3), so a later step is judged
 *     against the synchronized time.  A kernel that never reports the clock
 *     synchronized (no time service) keeps W1 as it is.
 *
 * Cost: a call whose wall clock reading is at or below clock_ok_until reads
 * no other clock.  A look raises it to the trusted time plus the tolerance:
 * the boot clock only moves forward, so a reading at or below that bound is
 * at most the tolerance ahead of the trusted time whenever it is taken (W1
 * holds without a look), and after a step within the tolerance calls still
 * read one clock (a bound of a second past the trusted time made them read
 * two for the rest of the boot).  A lowered tolerance applies to calls once
 * the bound passes, or at once when the writer's look (every second, W3)
 * finds a lead beyond it: a hold resets the bound.  Lock-free: compare-and-swap on shared
 * atomics.  This file may call clock.c and shmem.c; it never writes files,
 * never sleeps and never takes a lock.
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "snowflake.h"

/* A call with the check off looks at the setting this often (ns of wall clock). */
#define SF_WATCH_OFF_NS		(1000 * SF_NS_PER_MS)

/* floor((a) / SF_NS_PER_MS) for signed a. */
static inline int64
sf_floor_ms(int64 ns)
{
	return ns >= 0 ? ns / SF_NS_PER_MS : -((-ns + SF_NS_PER_MS - 1) / SF_NS_PER_MS);
}

/*
 * A lead over the trusted time, in whole ms, rounded to the nearest: the two
 * clocks are read a few hundred ns apart, and that noise must not decide
 * whether a step of exactly the tolerance is a jump.
 */
static inline int64
sf_step_ms(int64 ns)
{
	return sf_floor_ms(ns + SF_NS_PER_MS / 2);
}

/* Raise clock_ok_until (signed) to at least v. */
static void
sf_watch_raise_ok(int64 v)
{
	uint64		cur = pg_atomic_read_u64(&sf_shared->clock_ok_until);

	while ((int64) cur < v &&
		   !pg_atomic_compare_exchange_u64(&sf_shared->clock_ok_until, &cur, (uint64) v))
		;
}

/*
 * The trusted offset, ns.  Before the watch arms it follows the clock up; a
 * generating look arms it when the clock is plausible (W5).
 */
static int64
sf_watch_base(int64 offset, int64 wall_ns, bool generating)
{
	uint64		base = pg_atomic_read_u64(&sf_shared->clock_base);

	if (likely(pg_atomic_read_u32(&sf_shared->clock_armed) != 0))
		return (int64) base;

	while (offset > (int64) base &&
		   !pg_atomic_compare_exchange_u64(&sf_shared->clock_base, &base, (uint64) offset))
		;
	if (generating && wall_ns / SF_NS_PER_MS >= SF_EPOCH_UNIX_MS &&
		wall_ns / SF_NS_PER_MS >= (int64) sf_shared->clock_seen)
	{
		/* Once per arming: is this clock one a time service may still correct (W7)? */
		pg_atomic_write_u32(&sf_shared->clock_unsynced, sf_clock_synchronized() ? 0 : 1);
		pg_atomic_write_u32(&sf_shared->clock_armed, 1);
	}
	return Max(offset, (int64) base);
}

/*
 * W7: the watch armed on a clock no time service had synchronized, and the
 * kernel now reports it synchronized: the clock's lead over the trusted time
 * is the service's correction.  The trusted offset rises to the clock's (never
 * lowers, W6) and a hold ends; the one process whose compare-and-swap clears
 * the flag does it and says so.  Returns whether it did (the caller records
 * the new trusted time).  Cheap when the flag is clear: one atomic read.
 */
bool
sf_watch_sync(void)
{
	uint32		unsynced = pg_atomic_read_u32(&sf_shared->clock_unsynced);
	int64		offset;
	uint64		base;
	uint64		held;
	int64		lead_ms;

	if (likely(unsynced == 0) || pg_atomic_read_u32(&sf_shared->clock_armed) == 0 ||
		!sf_clock_synchronized() ||
		!pg_atomic_compare_exchange_u32(&sf_shared->clock_unsynced, &unsynced, 0))
		return false;

	offset = sf_wall_ns() - sf_boot_ns();
	base = pg_atomic_read_u64(&sf_shared->clock_base);
	lead_ms = sf_step_ms(offset - (int64) base);
	while (offset > (int64) base &&
		   !pg_atomic_compare_exchange_u64(&sf_shared->clock_base, &base, (uint64) offset))
		;
	pg_atomic_write_u64(&sf_shared->clock_ok_until, (uint64) PG_INT64_MIN);
	pg_atomic_write_u32(&sf_shared->clock_sync_unrecorded, 1);
	held = pg_atomic_read_u64(&sf_shared->clock_held);
	if (held != 0 && pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, 0))
		ereport(WARNING,
				(errmsg("snowflake: a time service synchronized the system clock, which it had not synchronized when the watch armed: "
						"its %lld ms forward step is taken as the correction of a clock that was behind, and generation resumes at the new time",
						(long long) held)));
	else if (lead_ms > 0)
		ereport(LOG,
				(errmsg("snowflake: a time service synchronized the system clock, which it had not synchronized when the watch armed: "
						"its %lld ms lead over the time trusted is taken as the correction; forward steps are held from here on",
						(long long) lead_ms)));
	else
		ereport(LOG,
				(errmsg("snowflake: a time service synchronized the system clock; forward steps are held from here on")));
	return true;
}

/* The clock's lead over the trusted time, whole ms, from a fresh reading. */
static int64
sf_watch_fresh_step_ms(void)
{
	int64		wall = sf_wall_ns();
	int64		offset = wall - sf_boot_ns();

	return sf_step_ms(offset - sf_watch_base(offset, wall, false));
}

/*
 * Look at the clock (wall_ns, just read by the caller).  Sets *held_ms to the
 * lead over the trusted time that holds generation, or 0: the caller refuses
 * when it is set, whatever the hold flag says.  Returns whether this look
 * began or ended a hold, so that the caller records it (sf_mark_record_hold()).
 * generating: a call that is about to issue IDs (it may arm the watch).
 */
SnowflakeWatchEvent
sf_watch_look(int64 wall_ns, int64 *held_ms, bool generating)
{
	int64		tol_ms = sf_max_clock_jump_ms;
	uint64		held = pg_atomic_read_u64(&sf_shared->clock_held);
	int64		boot;
	int64		base;
	int64		step_ms;

	*held_ms = 0;
	if (tol_ms == 0)
	{
		/* The check is off: look at the setting again in a second. */
		sf_watch_raise_ok(wall_ns + SF_WATCH_OFF_NS);
		if (held != 0 && pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, 0))
		{
			ereport(WARNING,
					(errmsg("snowflake: snowflake.max_clock_jump_ms was set to 0 during a hold for a %lld ms forward clock jump: "
							"generation resumes at the clock's time", (long long) held)));
			return SF_WATCH_RELEASED;
		}
		return SF_WATCH_SAME;
	}

	boot = sf_boot_ns();
	base = sf_watch_base(wall_ns - boot, wall_ns, generating);
	step_ms = sf_step_ms(wall_ns - boot - base);

	if (step_ms > 0)
	{
		uint64		max = pg_atomic_read_u64(&sf_shared->clock_max_jump);

		while ((uint64) step_ms > max &&
			   !pg_atomic_compare_exchange_u64(&sf_shared->clock_max_jump, &max, (uint64) step_ms))
			;
	}

	if (step_ms > tol_ms)
	{
		*held_ms = step_ms;
		if (likely(held != 0))
			return SF_WATCH_SAME;

		/* Begin a hold only on a fresh reading (W4), and not for a time service's first synchronization (W7). */
		step_ms = sf_watch_fresh_step_ms();
		if (step_ms <= tol_ms)
			return SF_WATCH_SAME;	/* it came back meanwhile; this call still refuses */
		if (sf_watch_sync())
		{
			*held_ms = 0;
			return SF_WATCH_RELEASED;	/* the caller records the new trusted time */
		}
		*held_ms = step_ms;
		pg_atomic_write_u64(&sf_shared->clock_ok_until, (uint64) PG_INT64_MIN);
		if (!pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, (uint64) step_ms))
			return SF_WATCH_SAME;
		pg_atomic_write_u32(&sf_shared->clock_held_tol, (uint32) tol_ms);
		pg_atomic_write_u64(&sf_shared->clock_ok_until, (uint64) PG_INT64_MIN);
		ereport(WARNING,
				(errmsg("snowflake: the system clock jumped %lld ms forward, more than snowflake.max_clock_jump_ms (%lld ms) beyond the time trusted: "
						"generation is held at the trusted time until the clock comes back or a superuser runs SELECT <extension schema>.snowflake_accept_clock()",
						(long long) step_ms, (long long) tol_ms)));
		return SF_WATCH_HELD;
	}

	if (unlikely(held != 0))
	{
		int64		fresh = sf_watch_fresh_step_ms();
		uint32		held_tol = pg_atomic_read_u32(&sf_shared->clock_held_tol);

		/* End a hold only on a fresh reading (W4). */
		if (fresh > tol_ms)
		{
			*held_ms = fresh;
			return SF_WATCH_SAME;
		}
		if (!pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, 0))
			return SF_WATCH_SAME;
		if (fresh > (int64) held_tol)
			ereport(WARNING,
					(errmsg("snowflake: snowflake.max_clock_jump_ms was raised to %lld ms, above the clock's %lld ms lead over the time trusted: "
							"generation resumes at the clock's time", (long long) tol_ms, (long long) fresh)));
		else
			ereport(WARNING,
					(errmsg("snowflake: the system clock came back within snowflake.max_clock_jump_ms (%lld ms) of the time trusted before its %lld ms jump: generation resumes",
							(long long) tol_ms, (long long) held)));
		sf_watch_raise_ok(boot + base + tol_ms * SF_NS_PER_MS);
		return SF_WATCH_RELEASED;
	}

	/*
	 * Trusted: calls up to here need no look (the trusted time only grows).
	 * Not before the watch arms: the first generating call must look.
	 */
	if (likely(pg_atomic_read_u32(&sf_shared->clock_armed) != 0))
		sf_watch_raise_ok(boot + base + tol_ms * SF_NS_PER_MS);
	return SF_WATCH_SAME;
}

/*
 * The clock part of a state file image, from a fresh reading: the time the
 * mark may be sized from (the wall clock, unless it is more than the tolerance
 * ahead of the trusted time: then the trusted time), whether generation is
 * held (so that no file says "not held" while the clock is ahead), the trusted
 * offset and the boot.  Changes nothing; may run under the lock.
 */
void
sf_watch_image(SnowflakeStateImage *img)
{
	int64		wall_ns = sf_wall_ns();
	int64		boot = sf_boot_ns();
	int64		tol_ns = (int64) sf_max_clock_jump_ms * SF_NS_PER_MS;
	bool		armed = pg_atomic_read_u32(&sf_shared->clock_armed) != 0;
	int64		base = (int64) pg_atomic_read_u64(&sf_shared->clock_base);
	int64		trusted_ns = boot + base;
	bool		ahead = armed && tol_ns > 0 && sf_step_ms(wall_ns - trusted_ns) > sf_max_clock_jump_ms;

	img->wall_unix_ms = ahead ? sf_floor_ms(trusted_ns) : sf_floor_ms(wall_ns);
	img->held = ahead || pg_atomic_read_u64(&sf_shared->clock_held) != 0;
	img->clock_armed = armed;
	img->clock_base_ns = armed ? base : Max(base, wall_ns - boot);
	img->clock_unsynced = armed && pg_atomic_read_u32(&sf_shared->clock_unsynced) != 0;
	img->has_boot_id = sf_shared->has_boot_id;
	memcpy(img->boot_id, sf_shared->boot_id, sizeof(img->boot_id));
}

/* The time, Unix ms, that the durable mark may be sized from (see sf_watch_image). */
int64
sf_watch_trusted_ms(void)
{
	SnowflakeStateImage img;

	sf_watch_image(&img);
	return img.wall_unix_ms;
}

/*
 * An operator accepts the clock as it is now: the trusted offset becomes the
 * current one, unless that is lower (W6), the watch arms, and a hold ends.
 * Returns how many ms the trusted time moved forward (0 if none).  The
 * caller records the end of a hold.
 */
int64
sf_watch_accept(void)
{
	int64		offset = sf_wall_ns() - sf_boot_ns();
	uint64		base = pg_atomic_read_u64(&sf_shared->clock_base);
	int64		old;
	uint64		held;
	bool		was_armed = pg_atomic_read_u32(&sf_shared->clock_armed) != 0;

	while (offset > (int64) base &&
		   !pg_atomic_compare_exchange_u64(&sf_shared->clock_base, &base, (uint64) offset))
		;
	old = (int64) base;
	pg_atomic_write_u32(&sf_shared->clock_armed, 1);
	pg_atomic_write_u64(&sf_shared->clock_ok_until, (uint64) PG_INT64_MIN);

	held = pg_atomic_read_u64(&sf_shared->clock_held);
	if (held != 0 && pg_atomic_compare_exchange_u64(&sf_shared->clock_held, &held, 0))
		ereport(WARNING,
				(errmsg("snowflake: the system clock's %lld ms forward jump was accepted with snowflake_accept_clock(): generation resumes at the new time",
						(long long) held)));
	/* Rounded as the hold's lead is, so that the two name the same ms. */
	return was_armed ? Max(sf_step_ms(offset - old), 0) : 0;
}

/* The kernel's boot id (random per boot), parsed into 16 bytes; false if unknown. */
static bool
sf_read_boot_id(uint8 *out)
{
	char		buf[64];
	ssize_t		len;
	int			fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
	int			n = 0;

	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	memset(out, 0, SF_BOOT_ID_LEN);
	for (int i = 0; buf[i] != '\0' && n < 2 * SF_BOOT_ID_LEN; i++)
	{
		int			v;

		if (buf[i] >= '0' && buf[i] <= '9')
			v = buf[i] - '0';
		else if (buf[i] >= 'a' && buf[i] <= 'f')
			v = buf[i] - 'a' + 10;
		else if (buf[i] >= 'A' && buf[i] <= 'F')
			v = buf[i] - 'A' + 10;
		else
			continue;
		out[n / 2] |= (uint8) (n % 2 == 0 ? v << 4 : v);
		n++;
	}
	return n == 2 * SF_BOOT_ID_LEN;
}

/*
 * Fresh shared memory (postmaster, at start-up and after a crash): the watch
 * from the state file (found: there is one; img: its contents).  On the same
 * boot the file's trusted offset is kept (W3): a clock more than the tolerance
 * ahead of it is held at once.  After a reboot, or in a new cluster, a file
 * that records a hold trusts its time again; otherwise the watch follows the
 * clock up until it arms (W5), from the file's time when the clock is behind it.
 */
void
sf_watch_startup(SnowflakeShared *shared, bool found, const SnowflakeStateImage *img)
{
	int64		wall = sf_wall_ns();
	int64		boot = sf_boot_ns();
	int64		offset = wall - boot;
	int64		seen_ns = found && img->wall_unix_ms > 0 ? img->wall_unix_ms * SF_NS_PER_MS : PG_INT64_MIN;
	int64		tol_ms = sf_max_clock_jump_ms;

	shared->has_boot_id = sf_read_boot_id(shared->boot_id);
	pg_atomic_write_u64(&shared->clock_held, 0);
	pg_atomic_write_u32(&shared->clock_held_recorded, found && img->held ? 1 : 0);
	pg_atomic_write_u64(&shared->clock_max_jump, 0);
	pg_atomic_write_u64(&shared->clock_ok_until, (uint64) PG_INT64_MIN);
	pg_atomic_write_u32(&shared->clock_held_tol, (uint32) tol_ms);

	if (found && img->clock_armed && img->has_boot_id && shared->has_boot_id &&
		memcmp(img->boot_id, shared->boot_id, SF_BOOT_ID_LEN) == 0)
	{
		int64		step_ms = sf_step_ms(offset - img->clock_base_ns);

		pg_atomic_write_u64(&shared->clock_base, (uint64) img->clock_base_ns);
		pg_atomic_write_u32(&shared->clock_unsynced, img->clock_unsynced ? 1 : 0);
		pg_atomic_write_u32(&shared->clock_armed, 1);
		if (tol_ms > 0 && step_ms > tol_ms)
		{
			pg_atomic_write_u64(&shared->clock_held, (uint64) step_ms);
			ereport(LOG,
					(errmsg("snowflake: the system clock jumped " INT64_FORMAT " ms forward of the time trusted before this start (same boot), "
							"more than snowflake.max_clock_jump_ms (" INT64_FORMAT " ms): generation is held at the trusted time until the clock "
							"comes back or a superuser runs SELECT <extension schema>.snowflake_accept_clock()", step_ms, tol_ms)));
		}
	}
	else if (found && img->held && seen_ns != PG_INT64_MIN)
	{
		/* A hold recorded before a reboot (or by an older version): its time is trusted again. */
		pg_atomic_write_u64(&shared->clock_base, (uint64) (seen_ns - boot));
		pg_atomic_write_u32(&shared->clock_unsynced, sf_clock_synchronized() ? 0 : 1);
		pg_atomic_write_u32(&shared->clock_armed, 1);
		ereport(LOG,
				(errmsg("snowflake: the state file records generation held for a forward clock jump; "
						"the time trusted then (Unix ms " INT64_FORMAT ") is trusted again",
						img->wall_unix_ms)));
	}
	else
	{
		/* Not armed: follow the clock up, from the file's time if the clock is behind it. */
		int64		start = offset;

		if (seen_ns != PG_INT64_MIN && seen_ns - boot > start)
			start = seen_ns - boot;
		pg_atomic_write_u64(&shared->clock_base, (uint64) start);
		pg_atomic_write_u32(&shared->clock_unsynced, 0);
		pg_atomic_write_u32(&shared->clock_armed, 0);
	}
}
