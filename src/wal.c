/*
 * wal.c: the durable mark travels in WAL, through a custom resource manager,
 * so that a promoted physical standby starts above every ID its old primary
 * could have issued in a transaction that reached it.
 *
 * Each time the primary raises the mark it logs one small record and flushes
 * it, before any ID beyond the old mark is handed out; every commit that uses
 * such an ID therefore lies later in WAL than the record.  Replay (on a standby,
 * and in crash recovery) hands the mark to the function registered with the
 * resource manager (mark.c's), which records it in the server's own state
 * file and lifts every node above it.  A second record, NODES, carries
 * snowflake.nodes' used and retired sets, logged after each write of that
 * file: replay writes them into the server's own file (mark.c), so standbys
 * and copies of standbys know them.  This file only builds, logs and decodes
 * the records: it calls nothing else of the extension.
 *
 * Trade-off: replay needs this library.  While records of ours lie after the
 * last checkpoint (on the primary) or are still to be replayed (on a standby),
 * removing snowflake from shared_preload_libraries stops recovery with
 * "resource manager with ID 128 not registered".  See README, Running a fleet.
 */
#include "postgres.h"

#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"

#include "snowflake.h"

/* RM_EXPERIMENTAL_ID until an ID is registered for snowflake on the wiki. */
#define SF_RMGR_ID			RM_EXPERIMENTAL_ID
#define XLOG_SNOWFLAKE_MARK 0x10
#define XLOG_SNOWFLAKE_NODES 0x20

/*
 * Since 1.3 a record also names its writer: the data directory of the primary
 * that logged it, which owned the node state then.  A standby witnesses only
 * once it has replayed, while streaming, a record of the owner its state file
 * names (mark.c).  A record of 1.2 (the mark alone) names no writer.
 */
typedef struct xl_snowflake_mark
{
	uint64		mark;			/* tick: no ID with a later ms was issued */
	uint64		writer_ino;		/* the writer's data directory, when SF_XL_WRITER */
	int64		writer_btime_sec;
	uint32		writer_btime_nsec;
	uint32		writer_flags;
} xl_snowflake_mark;

#define SF_XL_WRITER		0x1		/* writer_* name the owner that logged it */
#define SF_XL_WRITER_BTIME	0x2		/* writer_btime_* are known */
#define SF_XL_WRITER_NODE	0x4		/* bits 8-17: the writer's server node (round 5, F1) */
#define SF_XL_NODE_SHIFT	8
#define SF_XL_NODE_MASK		0x3FF
#define SF_XL_MARK_V12_SIZE	sizeof(uint64)

static void sf_wal_redo(XLogReaderState *record);
static void sf_wal_desc(StringInfo buf, XLogReaderState *record);
static const char *sf_wal_identify(uint8 info);

static sf_replay_fn sf_replay = NULL;
static sf_nodes_replay_fn sf_nodes_replay = NULL;

static RmgrData sf_rmgr = {
	.rm_name = "snowflake",
	.rm_redo = sf_wal_redo,
	.rm_desc = sf_wal_desc,
	.rm_identify = sf_wal_identify,
	/* no rm_decode: logical decoding skips our records */
};

XLogRecPtr	sf_wal_replay_lsn = InvalidXLogRecPtr;

/*
 * Register the resource manager; replay hands each mark to replay, and each
 * NODES record (snowflake.nodes' sets, since 1.4) to nodes_replay.
 */
void
sf_wal_register(sf_replay_fn replay, sf_nodes_replay_fn nodes_replay)
{
	sf_replay = replay;
	sf_nodes_replay = nodes_replay;
	RegisterCustomRmgr(SF_RMGR_ID, &sf_rmgr);
}

/*
 * Log a mark and flush it; returns once the record is durable locally, with
 * the record's end (what a synchronous standby must confirm).  writer: the
 * data directory of the owner logging it (NULL: none named).
 */
XLogRecPtr
sf_wal_log_mark(uint64 mark_tick, const SnowflakeIdentity *writer)
{
	xl_snowflake_mark xlrec;
	XLogRecPtr	lsn;

	memset(&xlrec, 0, sizeof(xlrec));
	xlrec.mark = mark_tick;
	if (writer != NULL)
	{
		uint32		node = pg_atomic_read_u32(&sf_shared->server_node);

		xlrec.writer_flags = SF_XL_WRITER | (writer->has_btime ? SF_XL_WRITER_BTIME : 0);
		/* The node this server runs as (its configuration files): a standby takes over that node only. */
		if (node != 0)
			xlrec.writer_flags |= SF_XL_WRITER_NODE | (((node - 1) & SF_XL_NODE_MASK) << SF_XL_NODE_SHIFT);
		xlrec.writer_ino = writer->ino;
		xlrec.writer_btime_sec = writer->btime_sec;
		xlrec.writer_btime_nsec = writer->btime_nsec;
	}
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, sizeof(xlrec));
	lsn = XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_MARK);
	XLogFlush(lsn);
	return lsn;
}

/*
 * Log snowflake.nodes' sets as just written, and flush: a
 * standby (and so any copy of it) learns which nodes this node state issued
 * under and which it must never issue, before the first ID of a new node.
 */
void
sf_wal_log_nodes(const SnowflakeNodesImage *img)
{
	XLogRecPtr	lsn;

	XLogBeginInsert();
	XLogRegisterData((char *) img, sizeof(*img));
	lsn = XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_NODES);
	XLogFlush(lsn);
}

/* A MARK record's mark and writer (1.3), or mark alone (1.2); false if malformed. */
static bool
sf_wal_decode(XLogReaderState *record, uint64 *mark, SnowflakeIdentity *writer, bool *has_writer, uint32 *node)
{
	xl_snowflake_mark xlrec;
	uint32		len = XLogRecGetDataLen(record);

	memset(&xlrec, 0, sizeof(xlrec));
	memset(writer, 0, sizeof(*writer));
	*has_writer = false;
	*node = 0;
	if (len != sizeof(xlrec) && len != SF_XL_MARK_V12_SIZE)
		return false;
	memcpy(&xlrec, XLogRecGetData(record), len);
	*mark = xlrec.mark;
	if (xlrec.writer_flags & SF_XL_WRITER)
	{
		*has_writer = true;
		writer->ino = xlrec.writer_ino;
		writer->has_btime = (xlrec.writer_flags & SF_XL_WRITER_BTIME) != 0;
		writer->btime_sec = xlrec.writer_btime_sec;
		writer->btime_nsec = xlrec.writer_btime_nsec;
		if (xlrec.writer_flags & SF_XL_WRITER_NODE)
			*node = ((xlrec.writer_flags >> SF_XL_NODE_SHIFT) & SF_XL_NODE_MASK) + 1;
	}
	return true;
}

static void
sf_wal_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	uint64		mark;
	SnowflakeIdentity writer;
	bool		has_writer;
	uint32		node;

	if (info == XLOG_SNOWFLAKE_NODES)
	{
		SnowflakeNodesImage img;

		if (XLogRecGetDataLen(record) != sizeof(img))
			elog(PANIC, "snowflake redo: NODES record of %u bytes", (unsigned) XLogRecGetDataLen(record));
		memcpy(&img, XLogRecGetData(record), sizeof(img));
		sf_wal_replay_lsn = record->ReadRecPtr;
		sf_nodes_replay(&img);
		return;
	}
	if (info != XLOG_SNOWFLAKE_MARK)
		elog(PANIC, "snowflake redo: unknown op code %u", info);

	if (!sf_wal_decode(record, &mark, &writer, &has_writer, &node))
		elog(PANIC, "snowflake redo: MARK record of %u bytes", (unsigned) XLogRecGetDataLen(record));
	sf_wal_replay_lsn = record->ReadRecPtr;
	sf_replay(mark, has_writer ? &writer : NULL, node);
}

static void
sf_wal_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_SNOWFLAKE_NODES)
	{
		SnowflakeNodesImage img;
		int			used = 0;
		int			retired = 0;

		if (XLogRecGetDataLen(record) != sizeof(img))
		{
			appendStringInfo(buf, "malformed (%u bytes)", (unsigned) XLogRecGetDataLen(record));
			return;
		}
		memcpy(&img, XLogRecGetData(record), sizeof(img));
		for (int n = 0; n < SF_NODE_COUNT; n++)
		{
			used += (int) SF_NODE_BIT(img.used, n);
			retired += (int) SF_NODE_BIT(img.retired, n);
		}
		appendStringInfo(buf, "used %d nodes, retired %d nodes", used, retired);
		return;
	}
	if (info == XLOG_SNOWFLAKE_MARK)
	{
		uint64		mark;
		SnowflakeIdentity writer;
		bool		has_writer;
		uint32		node;

		if (!sf_wal_decode(record, &mark, &writer, &has_writer, &node))
		{
			appendStringInfo(buf, "malformed (%u bytes)", (unsigned) XLogRecGetDataLen(record));
			return;
		}
		appendStringInfo(buf, "mark " INT64_FORMAT " (Unix ms)", (int64) mark + SF_EPOCH_UNIX_MS);
		if (has_writer)
			appendStringInfo(buf, "; owner " UINT64_FORMAT ":" INT64_FORMAT ".%09u", writer.ino,
							 writer.has_btime ? writer.btime_sec : 0, writer.has_btime ? writer.btime_nsec : 0);
		if (node != 0)
			appendStringInfo(buf, "; node %d/%d", SF_NODE_DC((int) node - 1), SF_NODE_MC((int) node - 1));
	}
}

static const char *
sf_wal_identify(uint8 info)
{
	if ((info & ~XLR_INFO_MASK) == XLOG_SNOWFLAKE_MARK)
		return "MARK";
	if ((info & ~XLR_INFO_MASK) == XLOG_SNOWFLAKE_NODES)
		return "NODES";
	return NULL;
}
