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
 * file and lifts every node above it.  This file only builds, logs and
 * decodes the record: it calls nothing else of the extension.
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

typedef struct xl_snowflake_mark
{
	uint64		mark;			/* tick: no ID with a later ms was issued */
} xl_snowflake_mark;

static void sf_wal_redo(XLogReaderState *record);
static void sf_wal_desc(StringInfo buf, XLogReaderState *record);
static const char *sf_wal_identify(uint8 info);

static sf_replay_fn sf_replay = NULL;

static RmgrData sf_rmgr = {
	.rm_name = "snowflake",
	.rm_redo = sf_wal_redo,
	.rm_desc = sf_wal_desc,
	.rm_identify = sf_wal_identify,
	/* no rm_decode: logical decoding skips our records */
};

/* Register the resource manager; replay hands each mark to replay. */
void
sf_wal_register(sf_replay_fn replay)
{
	sf_replay = replay;
	RegisterCustomRmgr(SF_RMGR_ID, &sf_rmgr);
}

/* Log a new mark and flush it; returns once the record is durable locally. */
void
sf_wal_log_mark(uint64 mark_tick)
{
	xl_snowflake_mark xlrec;
	XLogRecPtr	lsn;

	xlrec.mark = mark_tick;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, sizeof(xlrec));
	lsn = XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_MARK);
	XLogFlush(lsn);
}

static void
sf_wal_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	xl_snowflake_mark *xlrec;

	if (info != XLOG_SNOWFLAKE_MARK)
		elog(PANIC, "snowflake redo: unknown op code %u", info);

	xlrec = (xl_snowflake_mark *) XLogRecGetData(record);
	sf_replay(xlrec->mark);
}

static void
sf_wal_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_SNOWFLAKE_MARK)
	{
		xl_snowflake_mark *xlrec = (xl_snowflake_mark *) XLogRecGetData(record);

		appendStringInfo(buf, "mark " INT64_FORMAT " (Unix ms)", (int64) xlrec->mark + SF_EPOCH_UNIX_MS);
	}
}

static const char *
sf_wal_identify(uint8 info)
{
	if ((info & ~XLR_INFO_MASK) == XLOG_SNOWFLAKE_MARK)
		return "MARK";
	return NULL;
}
