/*
 * state.c: the durable high-water mark, a small file in the data directory.
 *
 * The file says: no ID whose ms lies beyond `mark` has been issued.  It is
 * written to a temp file, every write checked, fsynced, renamed over the old
 * one and the directory fsynced, so a crash leaves either the old file or the
 * new one.  A file that cannot be trusted (short, bad magic, version or
 * checksum, another cluster's) is never silently replaced: generation stops
 * with an error until an operator acts.  Writers hold SnowflakeShared->lock;
 * the write path therefore never ereports: it returns what failed.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/latch.h"

#include "snowflake.h"

#define SF_STATE_MAGIC		0x534E4F57	/* "SNOW" */
#define SF_STATE_VERSION	1
#define SF_STATE_CLEAN		0x1			/* written at clean shutdown */

/* On-disk layout: fixed size, no padding, CRC-32C over everything before crc. */
typedef struct SnowflakeStateFile
{
	uint32		magic;
	uint32		version;
	uint64		system_identifier;
	uint64		mark;			/* tick: no ID with a later ms was issued */
	int64		wall_unix_ms;	/* wall clock when written */
	uint64		owner_dev;		/* the data directory that owns the node state */
	uint64		owner_ino;
	uint32		flags;
	pg_crc32c	crc;
} SnowflakeStateFile;

StaticAssertDecl(sizeof(SnowflakeStateFile) == 56, "state file layout must not have padding");

static pg_crc32c
sf_state_crc(const SnowflakeStateFile *file)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, file, offsetof(SnowflakeStateFile, crc));
	FIN_CRC32C(crc);
	return crc;
}

/* Mark the state unusable, with a reason for the error's detail. */
static void
sf_state_damaged(SnowflakeShared *shared, const char *fmt,...) pg_attribute_printf(2, 3);

static void
sf_state_damaged(SnowflakeShared *shared, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(shared->message, sizeof(shared->message), fmt, ap);
	va_end(ap);
	shared->status = SF_STATE_DAMAGED;
	ereport(WARNING,
			(errmsg("snowflake state file \"%s\" is damaged", SF_STATE_FILE),
			 errdetail("%s", shared->message),
			 errhint("snowflake_next() refuses until the file is repaired; see the snowflake README, section Operations.")));
}

/*
 * Load the mark into shared (postmaster, at start-up and after each crash
 * re-initialisation).  A missing file is a new cluster: the mark is 0.
 */
void
sf_state_load(SnowflakeShared *shared)
{
	SnowflakeStateFile file;
	int			fd;
	ssize_t		len;
	int			save_errno;

	struct stat st;

	shared->status = SF_STATE_OK;
	shared->floor = 0;
	shared->clock_seen = 0;
	shared->copied = false;

	/* Which data directory is this?  A copy or a move gets another inode. */
	if (stat(".", &st) != 0)
	{
		sf_state_damaged(shared, "Could not stat the data directory: %s.", strerror(errno));
		return;
	}
	shared->self_dev = shared->owner_dev = (uint64) st.st_dev;
	shared->self_ino = shared->owner_ino = (uint64) st.st_ino;

	fd = BasicOpenFile(SF_STATE_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
		{
			SnowflakeStateResult res;

			/*
			 * A new cluster (or new to snowflake): write the file now, so that
			 * every later copy of this data directory carries its owner.
			 */
			res = sf_state_write(0, sf_wall_unix_ms(), false);
			if (!res.ok)
			{
				errno = res.save_errno;
				sf_state_damaged(shared, "It does not exist, and could not be created (%s %s): %s.",
								 res.action, res.path, strerror(errno));
				return;
			}
			ereport(LOG,
					(errmsg("snowflake state file \"%s\" created; generation starts from the clock",
							SF_STATE_FILE)));
			return;
		}
		sf_state_damaged(shared, "Could not open it: %s.", strerror(errno));
		return;
	}

	/* Read one byte more than we expect, to notice a file that is too long. */
	{
		char		buf[sizeof(SnowflakeStateFile) + 1];

		len = read(fd, buf, sizeof(buf));
		save_errno = errno;
		close(fd);
		if (len < 0)
		{
			sf_state_damaged(shared, "Could not read it: %s.", strerror(save_errno));
			return;
		}
		if (len != sizeof(SnowflakeStateFile))
		{
			sf_state_damaged(shared, "It is %zd bytes long, expected %zu.", len, sizeof(SnowflakeStateFile));
			return;
		}
		memcpy(&file, buf, sizeof(file));
	}

	if (file.magic != SF_STATE_MAGIC)
		sf_state_damaged(shared, "It has a bad magic number, %08X.", file.magic);
	else if (file.version != SF_STATE_VERSION)
		sf_state_damaged(shared, "It has version %u; this build reads version %d.",
						 file.version, SF_STATE_VERSION);
	else if (!EQ_CRC32C(file.crc, sf_state_crc(&file)))
		sf_state_damaged(shared, "Its checksum does not match its contents.");
	else if (file.system_identifier != GetSystemIdentifier())
		sf_state_damaged(shared, "It belongs to database system " UINT64_FORMAT ", not to this one (" UINT64_FORMAT ").",
						 file.system_identifier, GetSystemIdentifier());
	else if (file.mark > (uint64) SF_MAX_TICK)
		sf_state_damaged(shared, "Its mark " UINT64_FORMAT " is past the last Snowflake timestamp.", file.mark);
	else
	{
		shared->floor = file.mark;
		shared->clock_seen = file.wall_unix_ms > 0 ? (uint64) file.wall_unix_ms : 0;
		shared->owner_dev = file.owner_dev;
		shared->owner_ino = file.owner_ino;
		if (file.owner_dev != shared->self_dev || file.owner_ino != shared->self_ino)
		{
			shared->copied = true;
			ereport(WARNING,
					(errmsg("snowflake state file \"%s\" was written by another data directory: this one is a copy, or was moved",
							SF_STATE_FILE),
					 errhint("snowflake_next() refuses until the node state is adopted; see the snowflake README, section Running a fleet.")));
		}
		ereport(LOG,
				(errmsg("snowflake generation starts above " INT64_FORMAT " (Unix ms), from a %s",
						(int64) file.mark + SF_EPOCH_UNIX_MS,
						(file.flags & SF_STATE_CLEAN) ? "clean shutdown" : "reservation")));
	}
}

/* Fill in a failure; errno is kept for the caller's %m. */
static SnowflakeStateResult
sf_state_fail(const char *action, const char *path)
{
	SnowflakeStateResult res;

	res.ok = false;
	res.save_errno = errno;
	res.action = action;
	res.path = path;
	return res;
}

/* Report a failed write at elevel (after any lock is released), with a detail. */
static void
sf_state_report(SnowflakeStateResult res, int elevel, const char *detail)
{
	errno = res.save_errno;
	ereport(elevel,
			(errcode_for_file_access(),
			 errmsg("could not %s snowflake state file \"%s\": %m", res.action, res.path),
			 detail ? errdetail("%s", detail) : 0,
			 errhint("Check free space and permissions in the data directory.")));
}

/*
 * Write the mark durably.  Caller holds the lock (or is the postmaster at
 * shutdown); nothing here ereports.
 */
SnowflakeStateResult
sf_state_write(uint64 mark_tick, int64 wall_unix_ms, bool clean)
{
	SnowflakeStateFile file;
	SnowflakeStateResult res = {true, 0, NULL, NULL};
	int			fd;

	memset(&file, 0, sizeof(file));
	file.magic = SF_STATE_MAGIC;
	file.version = SF_STATE_VERSION;
	file.system_identifier = GetSystemIdentifier();
	file.mark = mark_tick;
	file.wall_unix_ms = wall_unix_ms;
	file.owner_dev = sf_shared->owner_dev;
	file.owner_ino = sf_shared->owner_ino;
	file.flags = clean ? SF_STATE_CLEAN : 0;
	file.crc = sf_state_crc(&file);

	fd = BasicOpenFile(SF_STATE_TMP_FILE, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		return sf_state_fail("create", SF_STATE_TMP_FILE);

	errno = 0;
	if (write(fd, &file, sizeof(file)) != sizeof(file))
	{
		if (errno == 0)
			errno = ENOSPC;		/* a short write means the disk is full */
		res = sf_state_fail("write", SF_STATE_TMP_FILE);
	}
	else if (pg_fsync(fd) != 0)
		res = sf_state_fail("fsync", SF_STATE_TMP_FILE);

	if (close(fd) != 0 && res.ok)
		res = sf_state_fail("close", SF_STATE_TMP_FILE);
	if (!res.ok)
		return res;

	if (rename(SF_STATE_TMP_FILE, SF_STATE_FILE) != 0)
		return sf_state_fail("rename", SF_STATE_TMP_FILE);

	/* Make the rename itself durable. */
	fd = BasicOpenFile(".", O_RDONLY | PG_BINARY);
	if (fd < 0)
		return sf_state_fail("open the directory of", SF_STATE_FILE);
	if (pg_fsync(fd) != 0)
		res = sf_state_fail("fsync the directory of", SF_STATE_FILE);
	close(fd);
	return res;
}

/* Clean shutdown: record the exact last ms issued, so a restart need not wait. */
void
sf_state_shutdown(SnowflakeShared *shared)
{
	uint64		last = 0;
	bool		any = false;
	SnowflakeStateResult res;

	if (shared->status != SF_STATE_OK)
		return;					/* never overwrite a file we could not trust */

	for (int i = 0; i < SF_NODE_COUNT; i++)
	{
		SnowflakeSlot *slot = &shared->slots[i].slot;

		if (pg_atomic_read_u32(&slot->used) == 0)
			continue;
		any = true;
		last = Max(last, (uint64) SF_WORD_TICK(pg_atomic_read_u64(&slot->word)));
	}
	if (!any)
		return;					/* nothing issued since start-up: file stays */

	res = sf_state_write(last, sf_wall_unix_ms(), true);
	if (!res.ok)
		sf_state_report(res, LOG,
						"At shutdown: the reservation written before stays in force; the next start may wait for the clock to pass it.");
}

/*
 * Raise the durable mark so that it covers need_tick: to need_tick (or the
 * clock, if later) plus the reservation window.  wait: queue for the lock;
 * otherwise give up when another process holds it (it is raising the mark).
 * A failed write is reported at elevel, after the lock is released.  Returns
 * true when the mark covers need_tick (plus half a window, for early raises).
 */
bool
sf_mark_raise(int64 need_tick, int64 now_tick, bool wait, int elevel)
{
	int64		window = sf_reservation_ms;
	int64		slack = wait ? 0 : window / 2;
	int64		target;
	SnowflakeStateResult res;

	/* A standby raises nothing: its marks come from WAL. */
	if (RecoveryInProgress())
		return false;

	if (wait)
		LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(sf_shared->lock, LW_EXCLUSIVE))
		return false;

	if (need_tick + slack <= (int64) pg_atomic_read_u64(&sf_shared->reserved))
	{
		LWLockRelease(sf_shared->lock);
		return true;
	}

	target = Min(Max(need_tick, now_tick) + window, SF_MAX_TICK);

	/*
	 * WAL first, so that standbys learn the mark before any commit that uses
	 * an ID beyond the old one.  (XLogInsert can only fail by PANIC here; the
	 * lock is released by the abort in any case.)
	 */
	sf_wal_log_mark((uint64) target);
	res = sf_state_write((uint64) target, now_tick + SF_EPOCH_UNIX_MS, false);
	if (res.ok)
	{
		/* Readers must never see the new mark before the file holds it. */
		pg_write_barrier();
		pg_atomic_write_u64(&sf_shared->reserved, (uint64) target);
	}
	LWLockRelease(sf_shared->lock);

	if (!res.ok)
		sf_state_report(res, elevel,
						"No ID beyond the durable high-water mark is issued until the mark can be written.");
	return res.ok;
}

/* Backend-local: when an early raise by this backend last failed. */
static int64 sf_raise_failed_tick = -1;

/* Backend-local: the mark at which this backend last woke the worker. */
static uint64 sf_woke_worker_at = PG_UINT64_MAX;

/*
 * Have the mark raised before generation reaches it: wake the worker, or, when
 * no worker runs, try it here without waiting for the lock.
 */
void
sf_mark_raise_soon(int64 need_tick, int64 now_tick)
{
	Latch	   *latch = (Latch *) sf_shared->worker_latch;
	uint64		reserved = pg_atomic_read_u64(&sf_shared->reserved);

	if (latch != NULL)
	{
		/* Once per mark is enough: the worker also looks on its own. */
		if (reserved != sf_woke_worker_at)
		{
			SetLatch(latch);
			sf_woke_worker_at = reserved;
		}
		return;
	}
	if (sf_raise_failed_tick >= 0 && now_tick - sf_raise_failed_tick < 100)
		return;					/* back off after a failure, as the worker does */
	if (!sf_mark_raise(need_tick, now_tick, false, LOG))
		sf_raise_failed_tick = now_tick;
}

/*
 * Replay of a mark logged by the primary (startup process): lift every node
 * above it, and record it in this server's own state file so that it survives
 * a restart of the standby.  A write failure only warns: replay goes on, and
 * the mark still holds in shared memory until the standby restarts.
 */
void
sf_mark_replayed(uint64 mark_tick)
{
	uint64		start_word = SF_WORD(mark_tick, SF_MAX_SEQUENCE);
	SnowflakeStateResult res = {true, 0, NULL, NULL};

	if (sf_shared == NULL)
		return;

	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	if (mark_tick > pg_atomic_read_u64(&sf_shared->reserved))
	{
		/* Never write over a file found damaged: it may hold a higher mark. */
		if (sf_shared->status == SF_STATE_OK)
			res = sf_state_write(mark_tick, sf_wall_unix_ms(), false);
		pg_atomic_write_u64(&sf_shared->reserved, mark_tick);
	}
	for (int i = 0; i < SF_NODE_COUNT; i++)
	{
		pg_atomic_uint64 *word = &sf_shared->slots[i].slot.word;
		uint64		old = pg_atomic_read_u64(word);

		while (old < start_word && !pg_atomic_compare_exchange_u64(word, &old, start_word))
			;
	}
	LWLockRelease(sf_shared->lock);

	if (!res.ok)
		sf_state_report(res, WARNING,
						"While replaying a mark: it holds in shared memory, but a restart of this standby before the next mark would forget it.");
}

/*
 * Adopt the node state of the data directory this one was copied from: from
 * now on this data directory owns it.  The caller has checked that this is
 * what the operator wants (snowflake_adopt_state(), or
 * snowflake.failover_adopt on promotion).
 */
void
sf_state_adopt(void)
{
	SnowflakeStateResult res;
	int64		now_ms = sf_wall_unix_ms();
	uint64		mark;
	uint64		old_dev;
	uint64		old_ino;

	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	if (!sf_shared->copied)
	{
		LWLockRelease(sf_shared->lock);
		return;
	}
	old_dev = sf_shared->owner_dev;
	old_ino = sf_shared->owner_ino;
	sf_shared->owner_dev = sf_shared->self_dev;
	sf_shared->owner_ino = sf_shared->self_ino;
	mark = pg_atomic_read_u64(&sf_shared->reserved);
	res = sf_state_write(mark, now_ms, false);
	if (res.ok)
		sf_shared->copied = false;
	else
	{
		/* Stay a copy until the file says otherwise. */
		sf_shared->owner_dev = old_dev;
		sf_shared->owner_ino = old_ino;
	}
	LWLockRelease(sf_shared->lock);

	if (!res.ok)
		sf_state_report(res, ERROR, "The data directory stays a copy: generation still refuses.");
	ereport(LOG,
			(errmsg("snowflake node state adopted by this data directory (device " UINT64_FORMAT ", inode " UINT64_FORMAT ")",
					sf_shared->self_dev, sf_shared->self_ino)));
}
