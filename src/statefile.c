/*
 * statefile.c: the state file's bytes on disk, and the identity of the data
 * directory that owns them.
 *
 * The file says: no ID whose ms lies beyond `mark` has been issued.  It is
 * written to a temp file, every write checked, fsynced, renamed over the old
 * one and the directory fsynced, so a crash leaves either the old file or the
 * new one.  Reading checks length, magic, version, checksum and cluster, and
 * says what is wrong; what to do about it is mark.c's business.  Nothing here
 * ereports or touches shared memory: callers may hold a lock.
 *
 * The owner is the data directory's identity: its inode and, where the file
 * system records it, its birth time.  Both survive a reboot and a remount (the
 * device number does not, on NFS, btrfs or a re-attached cloud volume); a copy
 * of the directory (base backup, restore, cp, rsync) is a new directory, with
 * another birth time and, almost always, another inode.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "access/xlog.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "snowflake.h"

#define SF_STATE_MAGIC		0x534E4F57	/* "SNOW" */
#define SF_STATE_VERSION	3
#define SF_STATE_CLEAN		0x1			/* written at clean shutdown */
#define SF_STATE_BTIME		0x2			/* owner_btime_* are known */
#define SF_STATE_HELD		0x4			/* generation held for a forward clock jump */
#define SF_STATE_ARMED		0x8			/* v3: clock_base_ns is the watch's trusted offset */
#define SF_STATE_BOOT_ID	0x10		/* v3: boot_id is known */
#define SF_STATE_UNSYNCED	0x20		/* v3: the watch armed on an unsynchronized clock (W7) */

/*
 * Version 3 on disk: version 2 with, appended before the crc, the clock
 * watch's fields (the kernel's boot_id and the trusted wall - boot offset) and
 * the data directory's timeline.  Fixed size, no padding, CRC-32C over
 * everything before crc.
 */
typedef struct SnowflakeStateFile
{
	uint32		magic;
	uint32		version;
	uint64		system_identifier;
	uint64		mark;			/* tick: no ID with a later ms was issued */
	int64		wall_unix_ms;	/* wall clock when written */
	uint64		owner_ino;		/* the data directory that owns the node state */
	int64		owner_btime_sec;
	uint32		owner_btime_nsec;
	uint32		flags;
	uint64		owner_dev;		/* informational only: changes across remounts */
	uint8		boot_id[16];	/* the kernel's boot_id when written (SF_STATE_BOOT_ID) */
	int64		clock_base_ns;	/* the clock watch's trusted wall - boot offset, ns */
	uint32		timeline;		/* this data directory's timeline when written */
	uint32		pad0;			/* zero */
	pg_crc32c	crc;
	uint32		pad;			/* zero */
} SnowflakeStateFile;

StaticAssertDecl(sizeof(SnowflakeStateFile) == 104, "state file layout must not have padding");

/* Version 2 (snowflake 1.2): read, never written. */
typedef struct SnowflakeStateFileV2
{
	uint32		magic;
	uint32		version;
	uint64		system_identifier;
	uint64		mark;			/* tick: no ID with a later ms was issued */
	int64		wall_unix_ms;	/* wall clock when written */
	uint64		owner_ino;		/* the data directory that owns the node state */
	int64		owner_btime_sec;
	uint32		owner_btime_nsec;
	uint32		flags;
	uint64		owner_dev;		/* informational only: changes across remounts */
	pg_crc32c	crc;
	uint32		pad;			/* zero */
} SnowflakeStateFileV2;

StaticAssertDecl(sizeof(SnowflakeStateFileV2) == 72, "version 2 layout must not have padding");

/* Version 1 (snowflake 1.0, 1.1): read, never written. */
typedef struct SnowflakeStateFileV1
{
	uint32		magic;
	uint32		version;
	uint64		system_identifier;
	uint64		mark;
	int64		wall_unix_ms;
	uint64		owner_dev;
	uint64		owner_ino;
	uint32		flags;
	pg_crc32c	crc;
} SnowflakeStateFileV1;

StaticAssertDecl(sizeof(SnowflakeStateFileV1) == 56, "version 1 layout must not have padding");

static pg_crc32c
sf_crc(const void *data, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}

/* This data directory's identity; false (and errno) if it cannot be read. */
bool
sf_datadir_identity(SnowflakeIdentity *id)
{
	struct statx stx;

	memset(id, 0, sizeof(*id));
	if (statx(AT_FDCWD, ".", AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_BTIME, &stx) != 0)
		return false;
	id->ino = stx.stx_ino;
	id->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	if (stx.stx_mask & STATX_BTIME)
	{
		id->has_btime = true;
		id->btime_sec = stx.stx_btime.tv_sec;
		id->btime_nsec = stx.stx_btime.tv_nsec;
	}
	return true;
}

/*
 * Whether two identities name the same directory: same inode, and the same
 * birth time where both know it.  The device is not compared.
 */
bool
sf_identity_same(const SnowflakeIdentity *a, const SnowflakeIdentity *b)
{
	if (a->ino != b->ino)
		return false;
	if (a->has_btime && b->has_btime)
		return a->btime_sec == b->btime_sec && a->btime_nsec == b->btime_nsec;
	return true;
}

/* The identity as text: inode, then birth time (s.ns) or "-". */
char *
sf_identity_text(const SnowflakeIdentity *id)
{
	if (id->has_btime)
		return psprintf(UINT64_FORMAT ":" INT64_FORMAT ".%09u", id->ino, id->btime_sec, id->btime_nsec);
	return psprintf(UINT64_FORMAT ":-", id->ino);
}

/* Say why the file is unusable, for the error's detail. */
static SnowflakeReadStatus
sf_damaged(char *why, size_t whylen, const char *fmt,...) pg_attribute_printf(3, 4);

static SnowflakeReadStatus
sf_damaged(char *why, size_t whylen, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return SF_READ_DAMAGED;
}

/* Say why the file cannot be read (not that it is damaged). */
static SnowflakeReadStatus
sf_unreadable(char *why, size_t whylen, const char *what, int save_errno)
{
	snprintf(why, whylen, "Could not %s it: %s.", what, strerror(save_errno));
	return SF_READ_UNREADABLE;
}

/*
 * Read path, a regular file, into buf: at most size bytes (*len: how many).
 * SF_READ_MISSING: there is none; SF_READ_UNREADABLE: it is there but could
 * not be opened or read, or is not a regular file (what names the file:
 * "state file" or "node file"); why says what.
 */
static SnowflakeReadStatus
sf_read_regular(const char *path, const char *what, char *buf, size_t size, ssize_t *len,
				char *why, size_t whylen)
{
	struct stat st;
	int			fd;
	int			save_errno;

	/* O_NONBLOCK: a FIFO planted in its place must not block the open (F8). */
	fd = BasicOpenFile(path, O_RDONLY | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
	{
		save_errno = errno;
		/* A dangling symbolic link is a file that cannot be read, not no file. */
		if (save_errno == ENOENT && lstat(path, &st) != 0 && errno == ENOENT)
			return SF_READ_MISSING;
		return sf_unreadable(why, whylen, "open", save_errno);
	}
	if (fstat(fd, &st) != 0)
	{
		save_errno = errno;
		close(fd);
		return sf_unreadable(why, whylen, "stat", save_errno);
	}
	if (!S_ISREG(st.st_mode))
	{
		close(fd);
		snprintf(why, whylen, "It is not a regular file (a FIFO, device or directory): move what is there away. If it took the place of "
				 "this data directory's own %s, that file was removed: the next start takes a complete temporary file of it, if one was "
				 "left; never put back an older copy.", what);
		return SF_READ_UNREADABLE;
	}
	*len = read(fd, buf, size);
	save_errno = errno;
	close(fd);
	if (*len < 0)
		return sf_unreadable(why, whylen, "read", save_errno);
	return SF_READ_OK;
}

/*
 * Read the state file at path into *img.  SF_READ_MISSING: there is none (a
 * new cluster, or new to snowflake); SF_READ_UNREADABLE: it is there but
 * could not be read (permissions, an I/O error, a dangling symbolic link):
 * its contents are unknown, not wrong; SF_READ_DAMAGED: it was read and is
 * wrong.  why says what.  any_system: accept a file of another database
 * system (an import from the cluster this one was upgraded from).
 */
SnowflakeReadStatus
sf_statefile_read_path(const char *path, bool any_system, SnowflakeStateImage *img,
					   char *why, size_t whylen)
{
	SnowflakeReadStatus st;
	char		buf[sizeof(SnowflakeStateFile) + 1];
	uint32		magic;
	uint32		version;
	uint64		sysid;
	ssize_t		len;

	memset(img, 0, sizeof(*img));
	/* Read one byte more than the largest layout, to notice a file that is too long. */
	st = sf_read_regular(path, "state file", buf, sizeof(buf), &len, why, whylen);
	if (st != SF_READ_OK)
		return st;
	if (len < (ssize_t) (2 * sizeof(uint32)))
		return sf_damaged(why, whylen, "It is %zd bytes long, expected %zu.", len, sizeof(SnowflakeStateFile));

	memcpy(&magic, buf, sizeof(magic));
	memcpy(&version, buf + sizeof(magic), sizeof(version));
	if (magic != SF_STATE_MAGIC)
		return sf_damaged(why, whylen, "It has a bad magic number, %08X.", magic);

	if (version == SF_STATE_VERSION && len == sizeof(SnowflakeStateFile))
	{
		SnowflakeStateFile file;

		memcpy(&file, buf, sizeof(file));
		if (!EQ_CRC32C(file.crc, sf_crc(&file, offsetof(SnowflakeStateFile, crc))))
			return sf_damaged(why, whylen, "Its checksum does not match its contents.");
		sysid = file.system_identifier;
		img->mark = file.mark;
		img->wall_unix_ms = file.wall_unix_ms;
		img->clean = (file.flags & SF_STATE_CLEAN) != 0;
		img->held = (file.flags & SF_STATE_HELD) != 0;
		img->owner.ino = file.owner_ino;
		img->owner.dev = file.owner_dev;
		img->owner.has_btime = (file.flags & SF_STATE_BTIME) != 0;
		img->owner.btime_sec = file.owner_btime_sec;
		img->owner.btime_nsec = file.owner_btime_nsec;
		img->clock_armed = (file.flags & SF_STATE_ARMED) != 0;
		img->clock_base_ns = file.clock_base_ns;
		img->has_boot_id = (file.flags & SF_STATE_BOOT_ID) != 0;
		img->clock_unsynced = (file.flags & SF_STATE_UNSYNCED) != 0;
		memcpy(img->boot_id, file.boot_id, sizeof(img->boot_id));
		img->timeline = file.timeline;
	}
	else if (version == 2 && len == sizeof(SnowflakeStateFileV2))
	{
		SnowflakeStateFileV2 file;

		memcpy(&file, buf, sizeof(file));
		if (!EQ_CRC32C(file.crc, sf_crc(&file, offsetof(SnowflakeStateFileV2, crc))))
			return sf_damaged(why, whylen, "Its checksum does not match its contents.");
		sysid = file.system_identifier;
		img->mark = file.mark;
		img->wall_unix_ms = file.wall_unix_ms;
		img->clean = (file.flags & SF_STATE_CLEAN) != 0;
		img->held = (file.flags & SF_STATE_HELD) != 0;
		img->owner.ino = file.owner_ino;
		img->owner.dev = file.owner_dev;
		img->owner.has_btime = (file.flags & SF_STATE_BTIME) != 0;
		img->owner.btime_sec = file.owner_btime_sec;
		img->owner.btime_nsec = file.owner_btime_nsec;
		/* Version 2 did not record the timeline: unknown (0). */
	}
	else if (version == 1 && len == sizeof(SnowflakeStateFileV1))
	{
		SnowflakeStateFileV1 file;

		memcpy(&file, buf, sizeof(file));
		if (!EQ_CRC32C(file.crc, sf_crc(&file, offsetof(SnowflakeStateFileV1, crc))))
			return sf_damaged(why, whylen, "Its checksum does not match its contents.");
		sysid = file.system_identifier;
		img->mark = file.mark;
		img->wall_unix_ms = file.wall_unix_ms;
		img->clean = (file.flags & SF_STATE_CLEAN) != 0;
		/* Version 1 knew the inode and the device; only the inode is kept. */
		img->owner.ino = file.owner_ino;
		img->owner.dev = file.owner_dev;
	}
	else if (version < 1 || version > SF_STATE_VERSION)
		return sf_damaged(why, whylen, "It has version %u; this build reads versions 1 to %d.",
						  version, SF_STATE_VERSION);
	else
		return sf_damaged(why, whylen, "It is %s%zd bytes long, expected %zu for version %u.",
						  len == (ssize_t) sizeof(buf) ? "more than " : "", len == (ssize_t) sizeof(buf) ? len - 1 : len,
						  version == 1 ? sizeof(SnowflakeStateFileV1) :
						  version == 2 ? sizeof(SnowflakeStateFileV2) : sizeof(SnowflakeStateFile),
						  version);

	if (!any_system && sysid != GetSystemIdentifier())
		return sf_damaged(why, whylen, "It belongs to database system " UINT64_FORMAT ", not to this one (" UINT64_FORMAT ").",
						  sysid, GetSystemIdentifier());
	if (img->mark > (uint64) SF_MAX_TICK)
		return sf_damaged(why, whylen, "Its mark " UINT64_FORMAT " is past the last Snowflake timestamp.", img->mark);
	return SF_READ_OK;
}

/* Read this data directory's own state file (see sf_statefile_read_path). */
SnowflakeReadStatus
sf_statefile_read(SnowflakeStateImage *img, char *why, size_t whylen)
{
	return sf_statefile_read_path(SF_STATE_FILE, false, img, why, whylen);
}

static SnowflakeStateResult sf_durable_write(const char *tmp, const char *path, const void *data, size_t len);

/* Fill in a failure; errno is kept for the caller's report. */
static SnowflakeStateResult
sf_fail(SnowflakeWriteStep step)
{
	SnowflakeStateResult res;

	res.ok = false;
	res.save_errno = errno;
	res.step = step;
	return res;
}

/*
 * Write the image durably: temp file, write, fsync, rename, fsync of the
 * directory.  Caller serialises writers; nothing here ereports.
 */
SnowflakeStateResult
sf_statefile_write(const SnowflakeStateImage *img)
{
	SnowflakeStateFile file;

	memset(&file, 0, sizeof(file));
	file.magic = SF_STATE_MAGIC;
	file.version = SF_STATE_VERSION;
	file.system_identifier = GetSystemIdentifier();
	file.mark = img->mark;
	file.wall_unix_ms = img->wall_unix_ms;
	file.owner_ino = img->owner.ino;
	file.owner_dev = img->owner.dev;
	file.timeline = img->timeline;
	if (img->owner.has_btime)
	{
		file.flags |= SF_STATE_BTIME;
		file.owner_btime_sec = img->owner.btime_sec;
		file.owner_btime_nsec = img->owner.btime_nsec;
	}
	if (img->held)
		file.flags |= SF_STATE_HELD;
	if (img->clock_armed)
		file.flags |= SF_STATE_ARMED;
	if (img->clock_unsynced)
		file.flags |= SF_STATE_UNSYNCED;
	if (img->has_boot_id)
	{
		file.flags |= SF_STATE_BOOT_ID;
		memcpy(file.boot_id, img->boot_id, sizeof(file.boot_id));
	}
	file.clock_base_ns = img->clock_base_ns;
	if (img->clean)
		file.flags |= SF_STATE_CLEAN;
	file.crc = sf_crc(&file, offsetof(SnowflakeStateFile, crc));

	return sf_durable_write(SF_STATE_TMP_FILE, SF_STATE_FILE, &file, sizeof(file));
}

/*
 * Write len bytes durably as path: a temp file (tmp) created afresh, written,
 * fsynced, renamed over path, and the directory fsynced, so a crash leaves
 * either the old file or the new one.  Caller serialises writers; nothing
 * here ereports.
 */
static SnowflakeStateResult
sf_durable_write(const char *tmp, const char *path, const void *data, size_t len)
{
	SnowflakeStateResult res = {true, 0, SF_STEP_NONE};
	int			fd;

	/*
	 * The temporary file is ours alone: remove whatever is there (a FIFO or a
	 * symbolic link planted in its place would block or redirect the write,
	 * F8) and create it afresh.
	 */
	if (unlink(tmp) != 0 && errno != ENOENT)
		return sf_fail(SF_STEP_CREATE);
	fd = BasicOpenFile(tmp, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd < 0)
		return sf_fail(SF_STEP_CREATE);

	errno = 0;
	if (write(fd, data, len) != (ssize_t) len)
	{
		if (errno == 0)
			errno = ENOSPC;		/* a short write means the disk is full */
		res = sf_fail(SF_STEP_WRITE);
	}
	else if (pg_fsync(fd) != 0)
		res = sf_fail(SF_STEP_FSYNC);

	if (close(fd) != 0 && res.ok)
		res = sf_fail(SF_STEP_CLOSE);
	if (!res.ok)
		return res;

	if (rename(tmp, path) != 0)
		return sf_fail(SF_STEP_RENAME);

	/* Make the rename itself durable. */
	fd = BasicOpenFile(".", O_RDONLY | PG_BINARY);
	if (fd < 0)
		return sf_fail(SF_STEP_OPEN_DIR);
	if (pg_fsync(fd) != 0)
		res = sf_fail(SF_STEP_FSYNC_DIR);
	close(fd);
	return res;
}

/* What a failed step did, and to which file, for messages: "could not %s ... \"%s\"". */
void
sf_write_step_text(SnowflakeWriteStep step, const char **action, const char **path)
{
	bool		nodes = (step & SF_STEP_NODES_FILE) != 0;
	const char *file = nodes ? SF_NODES_FILE : SF_STATE_FILE;

	*path = nodes ? SF_NODES_TMP_FILE : SF_STATE_TMP_FILE;
	switch ((SnowflakeWriteStep) (step & ~SF_STEP_NODES_FILE))
	{
		case SF_STEP_CREATE:
			*action = "create";
			break;
		case SF_STEP_WRITE:
			*action = "write";
			break;
		case SF_STEP_FSYNC:
			*action = "fsync";
			break;
		case SF_STEP_CLOSE:
			*action = "close";
			break;
		case SF_STEP_RENAME:
			*action = "rename";
			break;
		case SF_STEP_OPEN_DIR:
			*action = "open the directory of";
			*path = file;
			break;
		case SF_STEP_FSYNC_DIR:
			*action = "fsync the directory of";
			*path = file;
			break;
		default:
			*action = "write";
			break;
	}
}

/*
 * The standby witness, snowflake.standby: written by the reservation writer
 * of a server in standby mode while its WAL receiver streams from a primary,
 * naming this data directory (its identity) and cluster.  snowflake.failover_adopt
 * adopts only where this file names the data directory itself: a copy of it
 * (a base backup of a promoted standby) names another directory, and a data
 * directory that only ever ran archive recovery, or standby mode with no
 * primary to stream from, has none (attack on issue 19, F1/F2).
 */
typedef struct SnowflakeWitnessFile
{
	uint32		magic;
	uint32		version;
	uint64		sysid;
	uint64		ino;
	int64		btime_sec;
	uint32		btime_nsec;
	uint32		has_btime;
	uint32		crc;
	uint32		pad0;
} SnowflakeWitnessFile;

StaticAssertDecl(sizeof(SnowflakeWitnessFile) == 48, "witness layout must not have padding");

#define SF_WITNESS_MAGIC	0x53465753	/* "SWFS" */

static void
sf_witness_fill(SnowflakeWitnessFile *w, const SnowflakeIdentity *self)
{
	memset(w, 0, sizeof(*w));
	w->magic = SF_WITNESS_MAGIC;
	w->version = 1;
	w->sysid = GetSystemIdentifier();
	w->ino = self->ino;
	w->has_btime = self->has_btime ? 1 : 0;
	w->btime_sec = self->btime_sec;
	w->btime_nsec = self->btime_nsec;
	w->crc = sf_crc(w, offsetof(SnowflakeWitnessFile, crc));
}

/* Whether snowflake.standby names this data directory (self) of this cluster. */
bool
sf_witness_names_self(const SnowflakeIdentity *self)
{
	SnowflakeWitnessFile w;
	SnowflakeWitnessFile want;
	int			fd;
	ssize_t		len;

	fd = BasicOpenFile(SF_WITNESS_FILE, O_RDONLY | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
		return false;
	len = read(fd, &w, sizeof(w));
	close(fd);
	if (len != sizeof(w))
		return false;
	sf_witness_fill(&want, self);
	return memcmp(&w, &want, sizeof(w)) == 0;
}

/* Write snowflake.standby naming this data directory; returns whether it is durable. */
bool
sf_witness_write(const SnowflakeIdentity *self)
{
	SnowflakeWitnessFile w;
	int			fd;
	bool		ok;

	sf_witness_fill(&w, self);
	if (unlink(SF_WITNESS_TMP_FILE) != 0 && errno != ENOENT)
		return false;
	fd = BasicOpenFile(SF_WITNESS_TMP_FILE, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd < 0)
		return false;
	ok = write(fd, &w, sizeof(w)) == sizeof(w) && pg_fsync(fd) == 0;
	if (close(fd) != 0)
		ok = false;
	return ok && durable_rename(SF_WITNESS_TMP_FILE, SF_WITNESS_FILE, DEBUG1) == 0;
}

/*
 * snowflake.nodes: the nodes this data directory's node state issued IDs
 * under (used) and the nodes it must never issue (retired: the used nodes of
 * the data directory it was copied from, retired when it was adopted as a
 * new server).  A file of its own, so that snowflake.state keeps its layout.
 * Fixed size, no padding, CRC-32C over everything before crc.  Bit n of a
 * set (word n / 64, bit n % 64) is node n (SF_NODE_INDEX).
 */
typedef struct SnowflakeNodesFile
{
	uint32		magic;
	uint32		version;
	uint64		system_identifier;
	uint64		used[SF_NODE_SET_WORDS];
	uint64		retired[SF_NODE_SET_WORDS];
	pg_crc32c	crc;
	uint32		pad;			/* zero */
} SnowflakeNodesFile;

StaticAssertDecl(sizeof(SnowflakeNodesFile) == 280, "node file layout must not have padding");

#define SF_NODES_MAGIC		0x534E4E44	/* "SNND" */
#define SF_NODES_VERSION	1

/*
 * Read snowflake.nodes into *img.  SF_READ_MISSING: there is none (a new
 * cluster, or a data directory of an older version): both sets empty.  As
 * sf_statefile_read_path otherwise; why says what is wrong.
 */
SnowflakeReadStatus
sf_nodes_read(SnowflakeNodesImage *img, char *why, size_t whylen)
{
	return sf_nodes_read_path(SF_NODES_FILE, false, img, why, whylen);
}

/*
 * Read a node file at path; any_system: it may belong to another database
 * system (snowflake.nodes.import, the old cluster's file after pg_upgrade).
 */
SnowflakeReadStatus
sf_nodes_read_path(const char *path, bool any_system, SnowflakeNodesImage *img, char *why, size_t whylen)
{
	SnowflakeNodesFile file;
	char		buf[sizeof(SnowflakeNodesFile) + 1];
	SnowflakeReadStatus st;
	ssize_t		len;

	memset(img, 0, sizeof(*img));
	st = sf_read_regular(path, "node file", buf, sizeof(buf), &len, why, whylen);
	if (st != SF_READ_OK)
		return st;
	/* buf holds one byte more than the file, to notice one that is too long (round 34: "281 bytes" for 50 GB). */
	if (len != sizeof(file))
		return sf_damaged(why, whylen, "It is %s%zd bytes long, expected %zu.",
						  len == (ssize_t) sizeof(buf) ? "more than " : "", len == (ssize_t) sizeof(buf) ? len - 1 : len,
						  sizeof(file));
	memcpy(&file, buf, sizeof(file));
	if (file.magic != SF_NODES_MAGIC)
		return sf_damaged(why, whylen, "It has a bad magic number, %08X.", file.magic);
	if (file.version != SF_NODES_VERSION)
		return sf_damaged(why, whylen, "It has version %u; this build reads version %d.", file.version, SF_NODES_VERSION);
	if (!EQ_CRC32C(file.crc, sf_crc(&file, offsetof(SnowflakeNodesFile, crc))))
		return sf_damaged(why, whylen, "Its checksum does not match its contents.");
	if (!any_system && file.system_identifier != GetSystemIdentifier())
		return sf_damaged(why, whylen, "It belongs to database system " UINT64_FORMAT ", not to this one (" UINT64_FORMAT ").",
						  file.system_identifier, GetSystemIdentifier());
	memcpy(img->used, file.used, sizeof(img->used));
	memcpy(img->retired, file.retired, sizeof(img->retired));
	return SF_READ_OK;
}

/*
 * Write snowflake.nodes durably (as the state file is written).  A failed
 * step carries SF_STEP_NODES_FILE, so that its report names this file.
 * Caller serialises writers; nothing here ereports.
 */
SnowflakeStateResult
sf_nodes_write(const SnowflakeNodesImage *img)
{
	SnowflakeNodesFile file;
	SnowflakeStateResult res;

	memset(&file, 0, sizeof(file));
	file.magic = SF_NODES_MAGIC;
	file.version = SF_NODES_VERSION;
	file.system_identifier = GetSystemIdentifier();
	memcpy(file.used, img->used, sizeof(file.used));
	memcpy(file.retired, img->retired, sizeof(file.retired));
	file.crc = sf_crc(&file, offsetof(SnowflakeNodesFile, crc));
	res = sf_durable_write(SF_NODES_TMP_FILE, SF_NODES_FILE, &file, sizeof(file));
	if (!res.ok)
		res.step = (SnowflakeWriteStep) (res.step | SF_STEP_NODES_FILE);
	return res;
}
