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
#include <unistd.h>

#include "access/xlog.h"
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
	uint32		flags;
	pg_crc32c	crc;
} SnowflakeStateFile;

StaticAssertDecl(sizeof(SnowflakeStateFile) == 40, "state file layout must not have padding");

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
			(errmsg("snowflake state file \"%s\" is damaged: %s", SF_STATE_FILE, shared->message),
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

	shared->status = SF_STATE_OK;
	shared->floor = 0;
	shared->clock_seen = 0;

	fd = BasicOpenFile(SF_STATE_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
		{
			ereport(LOG,
					(errmsg("snowflake state file \"%s\" does not exist; generation starts from the clock",
							SF_STATE_FILE)));
			return;
		}
		sf_state_damaged(shared, "could not open it: %s", strerror(errno));
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
			sf_state_damaged(shared, "could not read it: %s", strerror(save_errno));
			return;
		}
		if (len != sizeof(SnowflakeStateFile))
		{
			sf_state_damaged(shared, "it is %zd bytes long, expected %zu", len, sizeof(SnowflakeStateFile));
			return;
		}
		memcpy(&file, buf, sizeof(file));
	}

	if (file.magic != SF_STATE_MAGIC)
		sf_state_damaged(shared, "bad magic number %08X", file.magic);
	else if (file.version != SF_STATE_VERSION)
		sf_state_damaged(shared, "unsupported version %u (this build reads version %d)",
						 file.version, SF_STATE_VERSION);
	else if (!EQ_CRC32C(file.crc, sf_state_crc(&file)))
		sf_state_damaged(shared, "checksum mismatch");
	else if (file.system_identifier != GetSystemIdentifier())
		sf_state_damaged(shared, "it belongs to database system " UINT64_FORMAT ", not to this one (" UINT64_FORMAT ")",
						 file.system_identifier, GetSystemIdentifier());
	else if (file.mark > (uint64) SF_MAX_TICK)
		sf_state_damaged(shared, "its mark " UINT64_FORMAT " is past the last Snowflake timestamp", file.mark);
	else
	{
		shared->floor = file.mark;
		shared->clock_seen = file.wall_unix_ms > 0 ? (uint64) file.wall_unix_ms : 0;
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
	{
		errno = res.save_errno;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not %s snowflake state file \"%s\" at shutdown: %m", res.action, res.path),
				 errdetail("The reservation written before stays in force; the next start may wait for the clock to pass it.")));
	}
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
	res = sf_state_write((uint64) target, now_tick + SF_EPOCH_UNIX_MS, false);
	if (res.ok)
	{
		/* Readers must never see the new mark before the file holds it. */
		pg_write_barrier();
		pg_atomic_write_u64(&sf_shared->reserved, (uint64) target);
	}
	LWLockRelease(sf_shared->lock);

	if (!res.ok)
	{
		errno = res.save_errno;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not %s snowflake state file \"%s\": %m", res.action, res.path),
				 errdetail("No ID beyond the durable high-water mark is issued until the mark can be written."),
				 errhint("Check free space and permissions in the data directory.")));
	}
	return res.ok;
}

/* Backend-local: when an early raise by this backend last failed. */
static int64 sf_raise_failed_tick = -1;

/*
 * Have the mark raised before generation reaches it: wake the worker, or, when
 * no worker runs, try it here without waiting for the lock.
 */
void
sf_mark_raise_soon(int64 need_tick, int64 now_tick)
{
	Latch	   *latch = (Latch *) sf_shared->worker_latch;

	if (latch != NULL)
	{
		SetLatch(latch);
		return;
	}
	if (sf_raise_failed_tick >= 0 && now_tick - sf_raise_failed_tick < 100)
		return;					/* back off after a failure, as the worker does */
	if (!sf_mark_raise(need_tick, now_tick, false, LOG))
		sf_raise_failed_tick = now_tick;
}
