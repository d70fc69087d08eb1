/*
 * mark.c: the durable high-water mark's policy: what it starts from, when and
 * how far it is raised, how callers wait for it, replay on standbys, adoption
 * of a copied data directory, and the exact value kept at clean shutdown.
 *
 * The mark is raised by the reservation writer (worker.c), ahead of
 * generation: callers never write it while a writer runs.  A caller whose IDs
 * would pass it wakes the writer and waits on a condition variable, at most
 * until its deadline (snowflake.max_wait_ms), cancellably; it refuses when the
 * write stalls or fails.  How far ahead the writer reserves follows how long
 * writes actually take.  No ID beyond a mark that was fsynced is ever issued.
 * While the clock watch holds generation (a forward clock jump), marks are
 * sized from the trusted time, never from the jumped wall clock, and every
 * file written records the hold and the trusted time, so a restart keeps it.
 * This file may call watch.c, statefile.c, wal.c, clock.c and shmem.c; it never hands
 * out IDs and never touches a generator word except to raise it on replay.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walreceiver.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/condition_variable.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "snowflake.h"

/* What sf_mark_sync_check_locked() found (and held generation for). */
typedef enum SfSyncChange
{
	SF_SYNC_NONE,				/* nothing: the reservation stands */
	SF_SYNC_NAMES,				/* synchronous_standby_names changed */
	SF_SYNC_STANDBYS			/* the same names, other standbys synchronous now */
} SfSyncChange;

/* How far ahead slow writes may push the mark: bounds the wait after a crash. */
#define SF_AHEAD_MAX_MS		60000
/* A writer retries a failed write after this long, doubling while it keeps failing, up to the cap. */
#define SF_RETRY_MS			100
#define SF_RETRY_MAX_MS		10000

/*
 * The reservation writer's episode of failed writes (that process only): how
 * many attempts in a row failed.  Only the first is logged; the write that
 * ends the episode logs the count.
 */
static int	sf_writer_failures = 0;
static bool sf_confirm_logged = false;	/* the writer logged a wait for the synchronous standbys */

/* When the next attempt after a failed write is due (monotonic ns). */
static int64 sf_writer_retry_ns = 0;

/* PostgreSQL's backup_label: a data directory restored from a base backup has it until recovery starts. */
#define SF_BACKUP_LABEL_FILE	"backup_label"

static void sf_mark_writer_adopt(void);
/* The writer looks at the clock at least this often. */
#define SF_WATCH_LOOK_MS	1000

static long sf_mark_writer_look(void);

/* The postmaster: the own file's mark, while an import is not written yet (sf_mark_load). */
static uint64 sf_load_own_mark = 0;

/* The writer: the streaming WAL senders' pids at its last look, and whether it logged an owner record. */
static int *sf_owner_pids = NULL;
static int	sf_owner_npids = 0;
static bool sf_owner_logged = false;

/* The writer: whether a failed write of the standby witness was logged. */
static bool sf_witness_failed = false;

/* Backend-local: the mark at which this backend last woke the writer. */
static uint64 sf_woke_writer_at = PG_UINT64_MAX;

/* Backend-local: when an early raise by this backend last failed (no writer). */
static int64 sf_raise_failed_tick = -1;

/* The recent slowest write, in ms, rounded up. */
static int64
sf_slow_ms(void)
{
	return ((int64) pg_atomic_read_u64(&sf_shared->write_slow_ns) + SF_NS_PER_MS - 1) / SF_NS_PER_MS;
}

/*
 * Raise the mark when generation comes within this many ms of it: half a
 * reservation window, or twice the recent slowest write if that is longer.
 */
int64
sf_mark_margin_ms(void)
{
	return Max(sf_reservation_ms / 2, Min(2 * sf_slow_ms(), SF_AHEAD_MAX_MS / 2));
}

/* How far ahead of generation a raise reserves: the window, or four slow writes. */
static int64
sf_mark_ahead_ms(void)
{
	return Max(sf_reservation_ms, Min(4 * sf_slow_ms(), SF_AHEAD_MAX_MS));
}

/* The highest tick any node has issued since start-up, or -1. */
static int64
sf_issued_high(void)
{
	int64		high = -1;

	for (int i = 0; i < SF_NODE_COUNT; i++)
	{
		SnowflakeSlot *slot = &sf_shared->slots[i].slot;

		if (pg_atomic_read_u32(&slot->used) != 0)
			high = Max(high, SF_WORD_TICK(pg_atomic_read_u64(&slot->word)));
	}
	return high;
}

/*
 * This data directory's timeline now, for the state file: during recovery the
 * timeline being replayed, afterwards the one WAL is written on.
 */
static uint32
sf_timeline_now(void)
{
	TimeLineID	tli = 0;

	if (RecoveryInProgress())
		(void) GetXLogReplayRecPtr(&tli);
	else
		tli = GetWALInsertionTimeLine();
	return (uint32) tli;
}

/*
 * Note the upstream this process's view of the WAL receiver shows connected,
 * if any, as the last one a WAL receiver connected to.  Called by the startup
 * process when it replays a record of the owner, by the reservation writer at
 * each look on a standby, by any WAL receiver's log message (snowflake.c's
 * emit_log_hook: a receiver logs "started streaming" once it knows its
 * upstream) and by sf_owner_evidence_fresh().  PostgreSQL 19 clears the WAL
 * receiver's sender_host whenever a receiver starts (every failed attempt to
 * reach a dead primary); 15-18 keep it until the next connection.
 */
void
sf_mark_observe_upstream(void)
{
	int			port;
	char		host[NI_MAXHOST];

	if (sf_shared == NULL || WalRcv == NULL)
		return;
	SpinLockAcquire(&WalRcv->mutex);
	port = WalRcv->sender_port;
	memcpy(host, WalRcv->sender_host, NI_MAXHOST);
	SpinLockRelease(&WalRcv->mutex);
	host[NI_MAXHOST - 1] = '\0';
	if (host[0] == '\0' && port == 0)
		return;					/* none connected yet (on 19: since the last receiver started) */
	SpinLockAcquire(&sf_shared->upstream_mutex);
	sf_shared->upstream_port = port;
	memcpy(sf_shared->upstream_host, host, NI_MAXHOST);
	SpinLockRelease(&sf_shared->upstream_mutex);
}

/*
 * Whether this standby replayed, in this postmaster's life, a record of the
 * owner streamed from the upstream its WAL receiver last connected to (19c
 * F3): the evidence is forgotten at every start and crash re-initialisation
 * (shared memory is new), and it holds only while the last connection of a
 * WAL receiver went to the same upstream (host and port) as when it was
 * recorded.  A standby re-pointed to a refused copy (primary_conninfo
 * changed and reloaded) has none once it connects there; one re-pointed to
 * the owner earns it again, as the owner logs a record when more standbys
 * stream from it.  Attempts that fail to connect (the primary died) change
 * nothing: a failover manager promotes such a standby.  The witness file
 * alone proves only an earlier streaming.  "Last connected" is what
 * sf_mark_observe_upstream() saw last: on PostgreSQL 19 a connection that
 * lived between two looks of the writer and logged nothing is not seen.
 */
static bool
sf_owner_evidence_fresh(void)
{
	bool		same;
	TimeLineID	replay_tli = 0;
	TimeLineID	request_tli;
	bool		same_tli;

	if (!sf_shared->owner_streamed || WalRcv == NULL)
		return false;
	sf_mark_observe_upstream();
	SpinLockAcquire(&sf_shared->upstream_mutex);
	same = sf_shared->upstream_port == sf_shared->owner_streamed_port &&
		strncmp(sf_shared->upstream_host, sf_shared->owner_streamed_host, NI_MAXHOST) == 0;
	SpinLockRelease(&sf_shared->upstream_mutex);

	/*
	 * And no timeline switch since (round 4, F1): a standby that followed its
	 * upstream onto a new timeline (the upstream, or a server above it, was
	 * promoted) holds records of the owner from before that promotion only.
	 * The promoted server owns the node state only once it adopts, and then
	 * its own record reaches this standby on the new timeline; if it refused
	 * (a copy), the owner may still run.  Both the timeline last replayed and
	 * the one the WAL receiver last asked for must be the record's.
	 */
	(void) GetXLogReplayRecPtr(&replay_tli);
	SpinLockAcquire(&WalRcv->mutex);
	request_tli = WalRcv->receiveStartTLI;
	SpinLockRelease(&WalRcv->mutex);
	same_tli = (uint32) replay_tli == sf_shared->owner_streamed_tli &&
		(request_tli == 0 || (uint32) request_tli == sf_shared->owner_streamed_tli);
	return same && same_tli;
}

/*
 * Whether this server was promoted (a standby, or an archive recovery, that
 * ended on a new timeline) since its state file was written: its timeline is
 * past the one the file records.  A copy started as a server of its own (a
 * base backup, a restored or copied data directory) stays on the timeline of
 * the file it was copied with, so snowflake.failover_adopt does not adopt it.
 * A file that records no timeline (written before 1.3) proves nothing.  A
 * timeline switch alone is no proof of a standby (archive recovery of a
 * copy, standby mode with no primary also switch): snowflake.standby must
 * name this data directory, written while it streamed as a standby; a copy
 * of a promoted standby carries a witness naming another directory.
 */
bool
sf_mark_promoted(void)
{
	uint32		file_tli = sf_shared->file_tli;

	return file_tli != 0 && !RecoveryInProgress() &&
		(uint32) GetWALInsertionTimeLine() > file_tli &&
		sf_shared->standby_witness && sf_owner_evidence_fresh();
}

/*
 * The recovery target setting of this server, if one is set (round 14, F1;
 * recovery_target_timeline counts unless 'latest', the default), else NULL;
 * snowflake.failover_adopt refuses while one is set (sf_check_can_generate).
 * A standby that stops at a recovery target (and promotes, or pauses and is
 * promoted) leaves unreplayed the WAL it received after the
 * target: MARK records of IDs its primary issued and streamed to it.  The
 * settings are fixed at server start, and a promotion that
 * snowflake.failover_adopt acts on happened since this server's last start
 * (its evidence is forgotten at every start), so they are the ones the
 * promotion ran with.  Set but never reached also counts: refusing then is
 * the safe side.
 */
const char *
sf_mark_recovery_target(void)
{
	/*
	 * recovery_target_timeline other than 'latest' (round 15, F1): a
	 * standby that stays on its timeline does not follow its upstream's
	 * promotion; promoted later, it took the owner's records from before
	 * that promotion for fresh evidence, while the promoted upstream had
	 * issued IDs on the new timeline.
	 */
	if (recoveryTargetTimeLineGoal != RECOVERY_TARGET_TIMELINE_LATEST)
		return "recovery_target_timeline";
	switch (recoveryTarget)
	{
		case RECOVERY_TARGET_UNSET:
			return NULL;
		case RECOVERY_TARGET_XID:
			return "recovery_target_xid";
		case RECOVERY_TARGET_TIME:
			return "recovery_target_time";
		case RECOVERY_TARGET_NAME:
			return "recovery_target_name";
		case RECOVERY_TARGET_LSN:
			return "recovery_target_lsn";
		case RECOVERY_TARGET_IMMEDIATE:
			return "recovery_target";
	}
	return "recovery_target";
}

/*
 * Publish the node this server runs as from its configuration files (the
 * reservation writer's settings: it connects to no database, so no ALTER
 * DATABASE or ALTER ROLE setting applies): the owner's MARK records carry it.
 * Called by the writer at start and after each reload.
 */
void
sf_mark_publish_node(void)
{
	uint32		node = 0;

	if (sf_datacenter_id != SF_NODE_UNSET && sf_machine_id != SF_NODE_UNSET)
		node = (uint32) SF_NODE_INDEX(sf_datacenter_id, sf_machine_id) + 1;
	/* A changed node: an owner logs its record again, so its standbys learn it. */
	if (pg_atomic_exchange_u32(&sf_shared->server_node, node) != node)
		sf_owner_logged = false;
}

/*
 * Whether a promoted standby may take over the node its owner ran as (round
 * 5, F1): the owner's record it replayed says which node the owner's server
 * ran as (from its configuration files), and this server must be configured
 * the same.  A copy given new node ids and adopted by hand is a new node; its
 * standby, still configured with the old ids, would otherwise take the old
 * node over while the original still runs it.  Records of an owner of an
 * older version say no node: nothing to compare.  *mine, *theirs: the nodes
 * (-1: not known), for the refusal.
 */
bool
sf_mark_adopt_node_ok(int *mine, int *theirs)
{
	uint32		m = pg_atomic_read_u32(&sf_shared->server_node);
	uint32		t = sf_shared->owner_streamed_node;

	*mine = (int) m - 1;
	*theirs = (int) t - 1;
	return t == 0 || m == t;
}

/*
 * Whether this server's WAL receiver streams from a primary now (standby mode
 * with primary_conninfo, connected): not archive recovery, not standby mode
 * with no primary.
 */
static bool
sf_wal_receiver_streaming(void)
{
	WalRcvState state;
	pid_t		pid;

	if (WalRcv == NULL)
		return false;
	SpinLockAcquire(&WalRcv->mutex);
	state = WalRcv->walRcvState;
	pid = WalRcv->pid;
	SpinLockRelease(&WalRcv->mutex);
	return state == WALRCV_STREAMING && pid != 0;
}

/* The clock part of a state file image: the trusted time, and whether generation is held. */
static void
sf_mark_clock(SnowflakeStateImage *img)
{
	sf_watch_image(img);
}

/*
 * The SQLSTATE of a failed operation on the state, node or witness file, from
 * its errno (round 27 of the outside attack, F1): as errcode_for_file_access()
 * does for PostgreSQL's own files, except that a quota or a file size limit
 * is a full disk (53100), EEXIST is what rename onto a directory that is not
 * empty gives, so something in the way (42809, as EISDIR and ENOTEMPTY; round
 * 28, F1: it was 58P02, not in README's list), and an error it does not know
 * (ESTALE, ETIMEDOUT or EINTR of a network file system, among others) is an
 * I/O error (58030), never internal_error (XX000): the storage failed, not
 * snowflake.
 */
static int
sf_file_sqlstate(int err)
{
	switch (err)
	{
		case ENOSPC:
		case EDQUOT:
		case EFBIG:
			return ERRCODE_DISK_FULL;
		case EPERM:
		case EACCES:
		case EROFS:
			return ERRCODE_INSUFFICIENT_PRIVILEGE;
		case ENOENT:
			return ERRCODE_UNDEFINED_FILE;
		case EEXIST:			/* rename onto a directory that is not empty */
		case ENOTDIR:
		case EISDIR:
		case ENOTEMPTY:
			return ERRCODE_WRONG_OBJECT_TYPE;
		case ENFILE:
		case EMFILE:
			return ERRCODE_INSUFFICIENT_RESOURCES;
		case ENOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		default:
			return ERRCODE_IO_ERROR;
	}
}

/* Reads the file at path as a state file or a node file, for sf_finish_tmp. */
typedef SnowflakeReadStatus (*SfCheckFile) (const char *path, char *why, size_t whylen);

static SnowflakeReadStatus
sf_check_state_file(const char *path, char *why, size_t whylen)
{
	SnowflakeStateImage img;

	return sf_statefile_read_path(path, false, &img, why, whylen);
}

static SnowflakeReadStatus
sf_check_nodes_file(const char *path, char *why, size_t whylen)
{
	SnowflakeNodesImage img;

	return sf_nodes_read_path(path, false, &img, why, whylen);
}

/*
 * No file at file, but a complete temporary one at tmp: a write that never
 * reached its rename.  Round 30 of the outside attack, F1, on the state file:
 * a directory was in the way at "snowflake.state" at a clean stop, then moved
 * away, and starting from the clock issued IDs issued before the stop.  A
 * temporary file's contents are at least what was last published (the mark
 * is written before it is published, and a stopping server writes the exact
 * last ID; the node sets only grow, and a node is recorded as used before its
 * first ID), so the write is finished: the file is renamed into place, and
 * the caller reads it as always (owner checked).  Returns SF_READ_OK then.
 *
 * A temporary file that is not complete (a write cut short before its fsync)
 * or of another cluster holds nothing that was published here: it is logged
 * and left for the writer to replace, and the file is missing, as before.
 * One that cannot be read may hold what was published (round 31, F1: a
 * temporary file the start could not open was removed, and generation started
 * from the clock below IDs issued): it is never removed, and the file is
 * unreadable, so generation stops; so it is when a complete one cannot be
 * renamed.  holds names what the file holds, for the messages.
 */
static SnowflakeReadStatus
sf_finish_tmp(const char *file, const char *tmp, const char *kind, const char *holds, SfCheckFile check,
			  char *why, size_t whylen)
{
	char		tmpwhy[256];
	struct stat stbuf;

	if (lstat(tmp, &stbuf) != 0 && errno == ENOENT)
		return SF_READ_MISSING;
	/* A FIFO, directory, dangling link or the like: nothing written (the writer replaces or refuses it). */
	if (stat(tmp, &stbuf) == 0 ? !S_ISREG(stbuf.st_mode) : errno == ENOENT)
	{
		ereport(LOG,
				(errmsg("snowflake temporary %s file \"%s\" is not taken: it is not a regular file (a FIFO, device, directory or dangling symbolic link)",
						kind, tmp),
				 errdetail("No write of %s went to it. \"%s\" is missing.", holds, file)));
		return SF_READ_MISSING;
	}
	switch (check(tmp, tmpwhy, sizeof(tmpwhy)))
	{
		case SF_READ_OK:
			break;
		case SF_READ_MISSING:
			return SF_READ_MISSING;
		case SF_READ_UNREADABLE:
			snprintf(why, whylen, "It does not exist, and its temporary file \"%s\", which may hold %s, could not be read. %s "
					 "Do not remove it.", tmp, holds, tmpwhy);
			return SF_READ_UNREADABLE;
		case SF_READ_DAMAGED:
			ereport(LOG,
					(errmsg("snowflake temporary %s file \"%s\" is not taken: %s", kind, tmp, tmpwhy),
					 errdetail("A temporary file cut short, or of another cluster, holds nothing of this data directory.")));
			return SF_READ_MISSING;
	}
	if (durable_rename(tmp, file, LOG) != 0)
	{
		int			save_errno = errno;

		/* durable_rename syncs the file and the directory after the rename, too. */
		if (lstat(tmp, &stbuf) != 0 && errno == ENOENT && stat(file, &stbuf) == 0 && S_ISREG(stbuf.st_mode))
			snprintf(why, whylen, "It did not exist; its complete temporary file \"%s\" was renamed into place, but could not be "
					 "synced to disk: %s. The next start reads it.", tmp, strerror(save_errno));
		else
			snprintf(why, whylen, "It does not exist, and its complete temporary file \"%s\" could not be renamed into place: %s. "
					 "Do not remove it: it holds %s.", tmp, strerror(save_errno), holds);
		return SF_READ_UNREADABLE;
	}
	ereport(LOG,
			(errmsg("snowflake %s file \"%s\" was missing: its complete temporary file \"%s\" was renamed into place",
					kind, file, tmp),
			 errdetail("A write of %s had not reached its rename (something in the way, or a stop between its fsync and its rename); "
					   "what it holds is kept.", holds)));
	return SF_READ_OK;
}

/* Report a failed write of the state file at elevel, with a detail. */
static void
sf_report_write_ext(int save_errno, SnowflakeWriteStep step, int elevel, const char *detail, bool stopping);

static void
sf_report_write(int save_errno, SnowflakeWriteStep step, int elevel, const char *detail)
{
	sf_report_write_ext(save_errno, step, elevel, detail, false);
}

/* stopping: at a clean stop (the hint then does not speak of a running server). */
static void
sf_report_write_ext(int save_errno, SnowflakeWriteStep step, int elevel, const char *detail, bool stopping)
{
	const char *action;
	const char *path;

	sf_write_step_text(step, &action, &path);
	errno = save_errno;
	ereport(elevel,
			(errcode(sf_file_sqlstate(save_errno)),
			 (step & SF_STEP_NODES_FILE) ?
			 errmsg("could not %s snowflake node file \"%s\": %m", action, path) :
			 errmsg("could not %s snowflake state file \"%s\": %m", action, path),
			 detail ? errdetail("%s", detail) : 0,
			 sf_file_sqlstate(save_errno) == ERRCODE_WRONG_OBJECT_TYPE && stopping ?
			 errhint("Something that is not a regular file (a directory?) is in the way at \"%s\" or \"%s\" in the data directory: "
					 "move it away before the next start.",
					 (step & SF_STEP_NODES_FILE) ? SF_NODES_TMP_FILE : SF_STATE_TMP_FILE,
					 (step & SF_STEP_NODES_FILE) ? SF_NODES_FILE : SF_STATE_FILE) :
			 sf_file_sqlstate(save_errno) == ERRCODE_WRONG_OBJECT_TYPE ?
			 errhint("Something that is not a regular file (a directory?) is in the way at \"%s\" or \"%s\" in the data directory: "
					 "move it away. If \"%s\" itself is gone, %s in this server's memory only until the file is written again: "
					 "do not stop the server before that.",
					 (step & SF_STEP_NODES_FILE) ? SF_NODES_TMP_FILE : SF_STATE_TMP_FILE,
					 (step & SF_STEP_NODES_FILE) ? SF_NODES_FILE : SF_STATE_FILE,
					 (step & SF_STEP_NODES_FILE) ? SF_NODES_FILE : SF_STATE_FILE,
					 (step & SF_STEP_NODES_FILE) ? "the node sets are" : "the durable mark is") :
			 errhint("Check free space, permissions and the health of the storage of the data directory.")));
}

/* Whether path is a regular file (following a symbolic link, as reads do). */
static bool
sf_file_regular(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * Report a failed write of the state or node file at a clean stop.  With the
 * file in place, it stays in force (detail_kept says what that means).  With
 * the file gone (removed, or a directory in its place), a rename that failed
 * left a complete temporary file, which the next start renames into place
 * (sf_finish_tmp); an earlier step left none, and what the file held is lost:
 * a WARNING says so (it said the file written before stays in force).
 */
static void
sf_report_shutdown_write(SnowflakeStateResult res, const char *detail_kept)
{
	bool		nodes = (res.step & SF_STEP_NODES_FILE) != 0;
	int			step = res.step & ~SF_STEP_NODES_FILE;
	const char *file = nodes ? SF_NODES_FILE : SF_STATE_FILE;
	const char *tmp = nodes ? SF_NODES_TMP_FILE : SF_STATE_TMP_FILE;
	const char *holds = nodes ? "the node sets" : "the exact mark";
	struct stat stbuf;
	bool		there = stat(file, &stbuf) == 0 && S_ISREG(stbuf.st_mode);
	char		detail[512];

	if (step >= SF_STEP_OPEN_DIR)
		snprintf(detail, sizeof(detail), "At shutdown: \"%s\" holds %s, but the data directory could not be synced: after a power loss "
				 "the next start may find the file written before, which holds what it held.", file, holds);
	else if (there)
		strlcpy(detail, detail_kept, sizeof(detail));
	else if (step == SF_STEP_RENAME)
		snprintf(detail, sizeof(detail), "At shutdown: \"%s\" is not there (removed, or something in its place), and the complete \"%s\" left "
				 "holds %s: the next start renames it into place. Do not remove it.", file, tmp, holds);
	else
		snprintf(detail, sizeof(detail), "At shutdown: \"%s\" is not there (removed, or something in its place), and no complete temporary "
				 "file was left: %s.", file,
				 nodes ? "the node sets are lost, the nodes retired here among them; put back this data directory's own file before the next start" :
				 sf_shared->copied ?	/* round 36, F2 */
				 "the mark is lost, and with it the record that this data directory is a copy: the next start would take it for a new server, "
				 "the owner of the original's node. Before the next start, put back this copy's state file, or the original's" :
				 "the mark is lost, and the next start begins from the clock, safe only once the clock is past every ID issued");
	sf_report_write_ext(res.save_errno, res.step, step < SF_STEP_OPEN_DIR && !there ? WARNING : LOG, detail, true);
}

/*
 * snowflake.nodes (issue 19, rounds 7-8): the nodes this data directory's
 * node state issued IDs under, and the nodes it must never issue.  A copy
 * adopted by hand as a NEW server (its configured node is not among the used
 * ones) retires the used nodes: the original may still issue under them, and
 * node settings that reach this server from the copied catalog (a function's
 * SET clause, database and role settings) or from applications (connection
 * options, SET, set_config()) cannot all be found by inspecting settings.
 */

/* A set of nodes as text, "datacenter D, machine M; ..." (palloc'd). */
static char *
sf_nodes_text(const uint64 *set)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int n = 0; n < SF_NODE_COUNT; n++)
		if (SF_NODE_BIT(set, n))
			appendStringInfo(&buf, "%sdatacenter %d, machine %d", buf.len > 0 ? "; " : "",
							 SF_NODE_DC(n), SF_NODE_MC(n));
	return buf.data;
}

static bool
sf_nodes_any(const uint64 *set)
{
	for (int w = 0; w < SF_NODE_SET_WORDS; w++)
		if (set[w] != 0)
			return true;
	return false;
}

/*
 * Write snowflake.nodes, then log the sets in WAL (a NODES record, flushed):
 * the writer, under the lock.  File first (round 11, F1: with the record
 * first, a base backup whose checkpoint fell between the two copied the old
 * file and replayed from after the record, never learning the node): a copy
 * whose snowflake.nodes predates the write has its checkpoint's redo pointer
 * before the record, so it replays it; and no ID is issued under a new node
 * before both are durable.  A failed write logs nothing (the file is as it
 * was).  After a crash between the two, the writer logs the sets again
 * before any node issues (nodes_logged).
 */
static SnowflakeStateResult
sf_nodes_write_log(const SnowflakeNodesImage *img)
{
	SnowflakeStateResult res = sf_nodes_write(img);

	if (res.ok)
		sf_wal_log_nodes(img);
	return res;
}

/*
 * Flag every slot from the sets (at start-up, and under the lock after they
 * change): retired, unknown (the file is damaged or unreadable), recorded
 * as used in the file and in WAL since this start (free to issue), or not
 * recorded yet (its next ID waits until the writer records it:
 * sf_nodes_await()).
 */
static void
sf_nodes_gates(SnowflakeShared *shared)
{
	for (int n = 0; n < SF_NODE_COUNT; n++)
		pg_atomic_write_u32(&shared->slots[n].slot.retired,
							shared->nodes_status != SF_STATE_OK ? SF_RETIRED_UNKNOWN :
							SF_NODE_BIT(shared->nodes_retired, n) ? SF_RETIRED_YES :
							SF_NODE_BIT(shared->nodes_used, n) && shared->nodes_logged ? SF_RETIRED_NO : SF_RETIRED_UNRECORDED);
}

/*
 * Start-up (postmaster): take in snowflake.nodes.import, the old cluster's
 * snowflake.nodes copied into this data directory after pg_upgrade (which
 * carries neither file): its retired nodes join this file's (*sets),
 * whatever system it belongs to, and so do its used ones if this file
 * records no node yet (else they are retired: below); the sets only grow,
 * so importing even the wrong file cannot let a node issue that would not
 * otherwise, only refuse more.
 * Written at once, then renamed to snowflake.nodes.imported; if the write
 * fails the sets hold in memory (the writer's next write of the file carries
 * them) and the import file stays, to be taken in again at the next start.
 * A damaged or unreadable import fails closed, like the own file.
 */
static void
sf_nodes_import(SnowflakeShared *shared, SnowflakeNodesImage *sets)
{
	SnowflakeNodesImage imp;
	SnowflakeReadStatus st;
	SnowflakeStateResult res;
	SnowflakeNodesImage late_retired;
	bool		fresh;
	char		why[sizeof(shared->nodes_message)];

	memset(&late_retired, 0, sizeof(late_retired));
	st = sf_nodes_read_path(SF_NODES_IMPORT_FILE, true, &imp, why, sizeof(why));
	if (st == SF_READ_MISSING)
		return;
	if (st != SF_READ_OK)
	{
		snprintf(shared->nodes_message, sizeof(shared->nodes_message),
				 "The node sets to import, \"%s\", cannot be used: %s", SF_NODES_IMPORT_FILE, why);
		shared->nodes_status = (st == SF_READ_DAMAGED) ? SF_STATE_DAMAGED : SF_STATE_UNREADABLE;
		ereport(WARNING,
				(errmsg("snowflake cannot import the node sets of \"%s\"", SF_NODES_IMPORT_FILE),
				 errdetail("%s", shared->nodes_message),
				 errhint("snowflake_next() refuses until it is replaced by the old cluster's \"%s\" and the server restarted, or removed.",
						 SF_NODES_FILE)));
		return;
	}
	/*
	 * A node counts as used only where this lineage issued under it: a copy
	 * configured as a used node adopts by hand as the original's replacement
	 * and retires nothing.  So the import's used nodes join this file's used
	 * set only in a cluster whose file records no node yet (the new cluster
	 * of pg_upgrade, before its first ID).  Taken in later (round 14, F2: a
	 * copy given another cluster's file, then configured as that file's node,
	 * adopted as a replacement and issued its original's node), those this
	 * cluster has not used are retired instead: a wrong file can only refuse
	 * more.
	 */
	fresh = !sf_nodes_any(sets->used) && !sf_nodes_any(sets->retired);
	for (int w = 0; w < SF_NODE_SET_WORDS; w++)
	{
		sets->retired[w] |= imp.retired[w];
		if (fresh)
			sets->used[w] |= imp.used[w];
		else
		{
			late_retired.retired[w] = imp.used[w] & ~sets->used[w] & ~sets->retired[w];
			sets->retired[w] |= late_retired.retired[w];
		}
	}
	res = sf_nodes_write(sets);
	if (!res.ok)
	{
		sf_report_write(res.save_errno, res.step, WARNING,
						"The imported node sets hold until the reservation writer next writes the file; \"" SF_NODES_IMPORT_FILE
						"\" stays and is imported again at the next start.");
		return;
	}
	if (rename(SF_NODES_IMPORT_FILE, SF_NODES_IMPORTED_FILE) != 0)
		ereport(WARNING,
				(errmsg("could not rename \"%s\" to \"%s\": %m", SF_NODES_IMPORT_FILE, SF_NODES_IMPORTED_FILE),
				 errdetail("Its node sets are recorded; they are imported again at the next start, which changes nothing.")));
	ereport(LOG,
			(errmsg("snowflake imported the node sets of \"%s\": used %s; retired %s", SF_NODES_IMPORT_FILE,
					sf_nodes_any(imp.used) ? sf_nodes_text(imp.used) : "none",
					sf_nodes_any(imp.retired) ? sf_nodes_text(imp.retired) : "none")));
	if (!fresh && sf_nodes_any(late_retired.retired))
		ereport(WARNING,
				(errmsg("snowflake took in \"%s\" after this server recorded nodes of its own: the nodes it used are retired here, not used",
						SF_NODES_IMPORT_FILE),
				 errdetail("Retired now: %s. An import's used nodes count as this server's own only at the first start after pg_upgrade, "
						   "before any ID; later they could make a copy configured as one of them adopt as a replacement instead of as a new server.",
						   sf_nodes_text(late_retired.retired))));
}

/*
 * A restored data directory whose record of being a copy could not be
 * written: fail closed (19c F1).  A decision kept only in memory is lost at a
 * crash re-initialisation or restart, once backup_label is gone; the server
 * does not start, and backup_label stays, so that the next start records it.
 * what: how the backup came (" that carries no state file", or "").
 */
static void
sf_restored_copy_fatal(SnowflakeStateResult res, const char *what)
{
	const char *action;
	const char *path;

	sf_write_step_text(res.step, &action, &path);
	errno = res.save_errno;
	ereport(FATAL,
			(errcode(sf_file_sqlstate(res.save_errno)),
			 errmsg("could not %s snowflake state file \"%s\" of a restored data directory: %m", action, path),
			 errdetail("This data directory was restored from a base backup (it has \"%s\")%s: it is a copy until snowflake_adopt_state(), "
					   "and the state file must record it before the server starts.", SF_BACKUP_LABEL_FILE, what),
			 errhint("Make \"%s\" and the data directory writable, then start the server again; \"%s\" is still there, so that start records the copy.",
					 SF_STATE_FILE, SF_BACKUP_LABEL_FILE)));
}

/* This start created snowflake.state (postmaster; sf_nodes_load says nothing of a missing snowflake.nodes then). */
static bool sf_state_created_now = false;

/*
 * Start-up (postmaster, after the state file): load snowflake.nodes and flag
 * every slot.  A file that is damaged or cannot be read fails closed: no node
 * is known not to be retired, so every slot refuses (SF_RETIRED_UNKNOWN), and
 * the file is never rewritten.
 */
static void
sf_nodes_load(SnowflakeShared *shared)
{
	SnowflakeNodesImage img;
	SnowflakeReadStatus st;
	char		why[sizeof(shared->nodes_message)];

	shared->nodes_status = SF_STATE_OK;
	shared->nodes_logged = false;
	shared->nodes_known = false;
	shared->nodes_message[0] = '\0';
	pg_atomic_write_u32(&shared->nodes_dirty, 0);
	st = sf_nodes_read(&img, why, sizeof(why));
	if (st == SF_READ_MISSING &&
		(st = sf_finish_tmp(SF_NODES_FILE, SF_NODES_TMP_FILE, "node", "the node sets", sf_check_nodes_file,
							why, sizeof(why))) == SF_READ_OK)
		st = sf_nodes_read(&img, why, sizeof(why));
	if (st != SF_READ_OK && st != SF_READ_MISSING)
	{
		memset(&img, 0, sizeof(img));
		strlcpy(shared->nodes_message, why, sizeof(shared->nodes_message));
		shared->nodes_status = st == SF_READ_DAMAGED ? SF_STATE_DAMAGED : SF_STATE_UNREADABLE;
		ereport(WARNING,
				(st == SF_READ_DAMAGED ?
				 errmsg("snowflake node file \"%s\" is damaged", SF_NODES_FILE) :
				 errmsg("could not read snowflake node file \"%s\"", SF_NODES_FILE),
				 errdetail("%s", shared->nodes_message),
				 errhint("snowflake_next() refuses until the file can be read; see the snowflake README, section Errors.")));
	}
	/*
	 * Round 33 of the outside attack, F1: a removed file emptied the sets
	 * without a word, and an adopted copy issued the original's retired node.
	 * The first start creates the file (empty), and a running server or a
	 * clean stop writes a removed one again, so missing means removed while
	 * the server was stopped, a base backup that carried none, or a data
	 * directory of a version before the file.  Not logged at the start that
	 * created the state file (unless this is a copy).  Only a file that was
	 * there is written again if removed (nodes_known): a missing one stays
	 * missing, and warns at each start (round 36).
	 */
	shared->nodes_known = st == SF_READ_OK;
	if (st == SF_READ_MISSING && shared->copied)
		ereport(WARNING,
				(errmsg("snowflake node file \"%s\" is not there: no node is recorded as used or as retired in this data directory",
						SF_NODES_FILE),
				 errdetail("This data directory is a copy waiting for adoption: adopted as a new server without the file of the data directory "
						   "it was copied from, it would retire none of the nodes that one issued IDs under (round 36 of the outside attack)."),
				 errhint("Stop the server and put the original's \"%s\" in its place before snowflake_adopt_state().", SF_NODES_FILE)));
	else if (st == SF_READ_MISSING && !sf_state_created_now)
		ereport(WARNING,
				(errmsg("snowflake node file \"%s\" is not there: no node is recorded as used or as retired in this data directory",
						SF_NODES_FILE),
				 errdetail("It was removed (or this data directory was last run by a version of snowflake before the file). "
						   "If this data directory issued IDs, or was adopted as a new server, a copy made from it would not retire the nodes used here, "
						   "and nodes retired here would issue again."),
				 errhint("If so, stop the server and put back this data directory's own \"%s\", written after its last adoption.",
						 SF_NODES_FILE)));
	if (shared->nodes_status == SF_STATE_OK)
		sf_nodes_import(shared, &img);
	memcpy(shared->nodes_used, img.used, sizeof(shared->nodes_used));
	memcpy(shared->nodes_retired, img.retired, sizeof(shared->nodes_retired));
	sf_nodes_gates(shared);
	if (sf_nodes_any(shared->nodes_retired))
		ereport(LOG,
				(errmsg("snowflake nodes retired on this server (\"%s\"): %s",
						SF_NODES_FILE, sf_nodes_text(shared->nodes_retired))));
}

/* Refuse for a snowflake.nodes that is damaged or could not be read (generation, adoption by hand). */
void
sf_nodes_refuse(const char *caller)
{
	bool		damaged = sf_shared->nodes_status == SF_STATE_DAMAGED;

	ereport(ERROR,
			(damaged ? errcode(ERRCODE_DATA_CORRUPTED) : errcode(ERRCODE_IO_ERROR),
			 damaged ?
			 errmsg("snowflake node file \"%s\" is damaged", SF_NODES_FILE) :
			 errmsg("could not read snowflake node file \"%s\"", SF_NODES_FILE),
			 errdetail("%s The file lists the nodes this server must never issue IDs under (those of the data directory it was copied from, "
					   "retired when it was adopted as a new server); %s refuses until it can be read.",
					   sf_shared->nodes_message, caller),
			 errhint("If it could not be read, fix its permissions or the storage, then restart the server. "
					 "If it is damaged, stop the server and put back a copy of this data directory's own file written after its last adoption "
					 "(an older one, or the original's, lacks the nodes retired since); remove it instead (while the server is stopped) only if "
					 "this data directory was never adopted as a new server with snowflake_adopt_state() (nor was any it was copied from), "
					 "since it lists nodes this server must not issue, and is not a copy waiting for adoption: a copy needs the original's file.")));
}

/*
 * A node not recorded as used in snowflake.nodes yet (generator.c, before its
 * first ID): have the writer record it, and wait until the file holds it
 * durably, within snowflake.max_wait_ms (at least SF_MARK_GRACE_MS).  A copy
 * of this data directory made at any moment after an ID was issued under a
 * node then knows the node was used here (issue 19, round 10: the record was
 * written after the ID, and a crash, a stopped writer or a failing disk in
 * between let a copy miss it).  Returns once recorded (or the slot is now
 * retired or unknown: the caller refuses); refuses a failed write or the
 * deadline.
 */
void
sf_nodes_await(int node, const char *caller)
{
	SnowflakeSlot *slot = &sf_shared->slots[node].slot;
	uint64		failures = pg_atomic_read_u64(&sf_shared->nodes_write_failures);
	int64		deadline = sf_mono_ns() + (int64) Max(sf_max_wait_ms, SF_MARK_GRACE_MS) * SF_NS_PER_MS;
	bool		prepared = false;

	pg_atomic_write_u32(&slot->record_wanted, 1);
	for (;;)
	{
		Latch	   *latch;
		int64		left;
		int64		until;

		pg_read_barrier();
		if (pg_atomic_read_u32(&slot->retired) != SF_RETIRED_UNRECORDED)
			break;
		if (pg_atomic_read_u64(&sf_shared->nodes_write_failures) != failures)
		{
			char		detail[256];

			if (prepared)
				ConditionVariableCancelSleep();
			sf_count_refusal(slot, node, "the snowflake node file could not record the node");
			pg_read_barrier();
			snprintf(detail, sizeof(detail),
					 "%s issues no ID under datacenter %d, machine %d before \"%s\" records that this server uses it.",
					 caller, SF_NODE_DC(node), SF_NODE_MC(node), SF_NODES_FILE);
			sf_report_write((int) pg_atomic_read_u32(&sf_shared->nodes_fail_errno),
							(SnowflakeWriteStep) pg_atomic_read_u32(&sf_shared->nodes_fail_step), ERROR, detail);
		}
		/*
		 * In a failure episode, the next attempt is scheduled: wait for it if
		 * it comes before the deadline, or give the last failure at once.
		 */
		until = (int64) pg_atomic_read_u64(&sf_shared->nodes_fail_until_ns);
		if (until > deadline)
			failures = UINT64_MAX;	/* the last failure's error, at the next turn */
		else
		{
			pg_atomic_write_u32(&sf_shared->nodes_dirty, 1);
			latch = (Latch *) sf_shared->worker_latch;
			if (latch != NULL && (until == 0 || sf_mono_ns() >= until))
				SetLatch(latch);
		}
		if (failures == UINT64_MAX)
			continue;
		latch = (Latch *) sf_shared->worker_latch;
		left = deadline;
		left -= sf_mono_ns();
		if (left <= 0)
		{
			if (prepared)
				ConditionVariableCancelSleep();
			sf_count_refusal(slot, node, "the snowflake node file did not record the node in time");
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s refused: \"%s\" did not record datacenter %d, machine %d within snowflake.max_wait_ms (%d ms)",
							caller, SF_NODES_FILE, SF_NODE_DC(node), SF_NODE_MC(node), sf_max_wait_ms),
					 errdetail("A node's first ID waits until \"%s\" records that this server uses the node; %s.",
							   SF_NODES_FILE,
							   latch == NULL ? "no reservation writer is running to write it (it may be restarting)" :
							   "the reservation writer has not written it yet (a slow or stalled disk)"),
					 errhint("Check the storage of the data directory and the server log. "
							 "A larger snowflake.max_wait_ms lets calls wait longer for the write.")));
		}
		if (!prepared)
		{
			ConditionVariablePrepareToSleep(&sf_shared->mark_cv);
			prepared = true;
			continue;
		}
		(void) ConditionVariableTimedSleep(&sf_shared->mark_cv, Min(left / SF_NS_PER_MS + 1, 100),
										   PG_WAIT_EXTENSION);
	}
	if (prepared)
		ConditionVariableCancelSleep();
}

/* A backend's node issued its first ID since start-up: have the writer look (generator.c, once per node). */
void
sf_mark_note_used(void)
{
	Latch	   *latch;

	pg_atomic_write_u32(&sf_shared->nodes_dirty, 1);
	latch = (Latch *) sf_shared->worker_latch;
	if (latch != NULL)
		SetLatch(latch);
}

/*
 * The used set as it should be (under the lock, or in the postmaster at
 * shutdown): what the file holds and every slot that issued an ID since
 * start-up or whose first ID waits to be recorded (never a retired one).
 * Returns whether it holds a node the file does not.
 */
static bool
sf_nodes_collect(SnowflakeNodesImage *img)
{
	bool		changed = false;

	memcpy(img->used, sf_shared->nodes_used, sizeof(img->used));
	memcpy(img->retired, sf_shared->nodes_retired, sizeof(img->retired));
	for (int n = 0; n < SF_NODE_COUNT; n++)
	{
		SnowflakeSlot *slot = &sf_shared->slots[n].slot;

		if ((pg_atomic_read_u32(&slot->used) != 0 || pg_atomic_read_u32(&slot->record_wanted) != 0) &&
			!SF_NODE_BIT(img->used, n) && !SF_NODE_BIT(img->retired, n))
		{
			img->used[n / 64] |= UINT64CONST(1) << (n % 64);
			changed = true;
		}
	}
	return changed;
}

/*
 * The writer: record in snowflake.nodes the nodes whose first ID waits
 * (sf_nodes_await()), and any used since the last look: one write per new
 * node, then its NODES record.  Only a primary that owns its node
 * state records.  After a failed write the next attempt is scheduled (100 ms,
 * doubling, at most SF_RETRY_MAX_MS) and published (nodes_fail_until_ns):
 * callers wait for it or fail at once, so no role can turn its calls into
 * write attempts and WAL records.  One WARNING per episode.
 */
static int	sf_nodes_failures = 0;
static int64 sf_nodes_retry_ns = 0;
static bool sf_nodes_heal = false;	/* the file is missing: write it though no node is new */

static void
sf_mark_record_nodes(void)
{
	SnowflakeNodesImage img;
	SnowflakeStateResult res = {true, 0, SF_STEP_NONE};
	bool		changed;

	if (sf_shared->nodes_status != SF_STATE_OK || RecoveryInProgress())
		return;
	/* A copy waiting for adoption records nothing, but a removed file is written again (round 35, F1). */
	if (sf_shared->copied && !sf_nodes_heal)
		return;
	if (sf_nodes_failures > 0 && sf_mono_ns() < sf_nodes_retry_ns)
		return;
	if (pg_atomic_exchange_u32(&sf_shared->nodes_dirty, 0) == 0 && sf_nodes_failures == 0 &&
		sf_shared->nodes_logged && !sf_nodes_heal)
		return;
	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	if (!sf_shared->nodes_logged && !sf_shared->copied)
	{
		SnowflakeNodesImage held;

		/*
		 * Once after start-up (or a promotion, or an adoption): the sets the
		 * file holds go into WAL before any node issues, in case the last
		 * write was not logged (a crash between the two).
		 */
		memcpy(held.used, sf_shared->nodes_used, sizeof(held.used));
		memcpy(held.retired, sf_shared->nodes_retired, sizeof(held.retired));
		sf_wal_log_nodes(&held);
		sf_shared->nodes_logged = true;
		sf_nodes_gates(sf_shared);
	}
	changed = sf_nodes_collect(&img) || sf_nodes_heal;
	if (changed)
	{
		/* A standby, and any copy of it, learns the node before its first ID (a copy: the file only). */
		res = sf_shared->copied ? sf_nodes_write(&img) : sf_nodes_write_log(&img);
		if (res.ok)
		{
			if (sf_nodes_heal)
				ereport(LOG,
						(errmsg("snowflake node file \"%s\" was missing: written again from this server's memory", SF_NODES_FILE),
						 errdetail("Used: %s. Retired: %s.", sf_nodes_text(img.used), sf_nodes_text(img.retired))));
			sf_nodes_heal = false;
			sf_shared->nodes_known = true;
			memcpy(sf_shared->nodes_used, img.used, sizeof(sf_shared->nodes_used));
			sf_nodes_gates(sf_shared);
			pg_atomic_write_u64(&sf_shared->nodes_fail_until_ns, 0);
		}
		else
		{
			sf_nodes_failures++;
			sf_nodes_retry_ns = sf_mono_ns() +
				Min((int64) SF_RETRY_MS << Min(sf_nodes_failures - 1, 10), (int64) SF_RETRY_MAX_MS) * SF_NS_PER_MS;
			pg_atomic_write_u32(&sf_shared->nodes_fail_errno, (uint32) res.save_errno);
			pg_atomic_write_u32(&sf_shared->nodes_fail_step, (uint32) res.step);
			pg_atomic_write_u64(&sf_shared->nodes_fail_until_ns, (uint64) sf_nodes_retry_ns);
			pg_write_barrier();
			pg_atomic_fetch_add_u64(&sf_shared->nodes_write_failures, 1);
		}
	}
	LWLockRelease(sf_shared->lock);
	ConditionVariableBroadcast(&sf_shared->mark_cv);

	if (!res.ok)
	{
		if (sf_nodes_failures == 1)
			sf_report_write(res.save_errno, res.step, WARNING,
							sf_nodes_heal ?
							"The file is missing: until it is written again, the node sets are in this server's memory only; "
							"the reservation writer retries, less often the longer it fails." :
							"The first ID under a node the file does not record waits for it, and is refused until it is written; "
							"the reservation writer retries, less often the longer it fails. Nodes the file records issue IDs as before.");
	}
	else if (sf_nodes_failures > 0)
	{
		ereport(LOG,
				(errmsg("snowflake node file \"%s\" written again, after %d failed attempts", SF_NODES_FILE, sf_nodes_failures)));
		sf_nodes_failures = 0;
	}
}

/* Clean shutdown (postmaster): record nodes used since the writer's last look. */
static void
sf_nodes_shutdown(SnowflakeShared *shared)
{
	SnowflakeNodesImage img;
	SnowflakeStateResult res;

	/* A copy records no node, but writes a removed file again (round 35, F1). */
	if (shared->nodes_status != SF_STATE_OK || (shared->copied && (sf_file_regular(SF_NODES_FILE) || !shared->nodes_known)))
		return;
	/* New nodes, or the file removed (or something in its place): round 34, F1.  Not one missing at start-up. */
	if (!sf_nodes_collect(&img) && (sf_file_regular(SF_NODES_FILE) || !shared->nodes_known))
		return;
	res = sf_nodes_write(&img);
	if (!res.ok)
		sf_report_shutdown_write(res, "At shutdown: the nodes used since the last write are not recorded.");
}

/* Log a mark of target ticks in WAL (sf_mark_write, before and after the file's write). */
static XLogRecPtr
sf_mark_log(int64 target)
{
	return sf_wal_log_mark((uint64) target, sf_shared->copied ? NULL : &sf_shared->self);
}

/* The mark the state file holds (under the lock): reserved, or one still unconfirmed. */
static uint64
sf_mark_held(void)
{
	return Max(pg_atomic_read_u64(&sf_shared->reserved), pg_atomic_read_u64(&sf_shared->unconfirmed));
}

/*
 * Whether the synchronous standbys have flushed WAL up to lsn (true at once
 * when none is configured).  PostgreSQL waits for them only at the commit of
 * a transaction that wrote, so a MARK record could otherwise be on this
 * server alone while IDs beyond the old mark are returned by a SELECT, or by
 * a transaction that rolls back: a standby promoted after this server's death
 * would issue them again (round 16).  Flush, whatever synchronous_commit
 * says: a session's setting must not weaken the failover guarantee.
 */
static int
sf_standby_priority_cmp(const void *a, const void *b)
{
	const SyncRepStandbyData *sa = (const SyncRepStandbyData *) a;
	const SyncRepStandbyData *sb = (const SyncRepStandbyData *) b;

	if (sa->sync_standby_priority != sb->sync_standby_priority)
		return sa->sync_standby_priority < sb->sync_standby_priority ? -1 : 1;
	return sa->walsnd_index < sb->walsnd_index ? -1 : sa->walsnd_index > sb->walsnd_index ? 1 : 0;
}

static int
sf_lsn_desc_cmp(const void *a, const void *b)
{
	XLogRecPtr	la = *(const XLogRecPtr *) a;
	XLogRecPtr	lb = *(const XLogRecPtr *) b;

	return la > lb ? -1 : la < lb ? 1 : 0;
}

/*
 * The WAL position the synchronous standbys of now have all flushed, as
 * PostgreSQL chooses them (FIRST n: the n of highest priority among those
 * streaming, the least of their positions; ANY n: the n-th highest), or
 * InvalidXLogRecPtr when fewer stream.  Not PostgreSQL's confirmed position
 * (WalSndCtl->lsn), which only grows: when the set changes without a reload
 * (FIRST 1 (a, b) and a dies, so b is synchronous now) it still says what a
 * had flushed (round 19 of the outside attack, F2).
 */
static XLogRecPtr
sf_syncrep_position(void)
{
	SyncRepStandbyData *standbys;
	int			n;
	int			need;
	XLogRecPtr	pos = InvalidXLogRecPtr;

	if (SyncRepConfig == NULL)
		return InvalidXLogRecPtr;
	need = SyncRepConfig->num_sync;
	n = SyncRepGetCandidateStandbys(&standbys);
	if (need > 0 && n >= need)
	{
		if (SyncRepConfig->syncrep_method == SYNC_REP_PRIORITY)
		{
			qsort(standbys, n, sizeof(SyncRepStandbyData), sf_standby_priority_cmp);
			pos = standbys[0].flush;
			for (int i = 1; i < need; i++)
				pos = Min(pos, standbys[i].flush);
		}
		else
		{
			XLogRecPtr *flush = palloc(sizeof(XLogRecPtr) * n);

			for (int i = 0; i < n; i++)
				flush[i] = standbys[i].flush;
			qsort(flush, n, sizeof(XLogRecPtr), sf_lsn_desc_cmp);
			pos = flush[need - 1];
			pfree(flush);
		}
	}
	pfree(standbys);
	return pos;
}

static bool
sf_syncrep_confirmed(XLogRecPtr lsn)
{
	if (max_wal_senders == 0 || SyncRepStandbyNames == NULL || SyncRepStandbyNames[0] == '\0')
		return true;
	return sf_syncrep_position() >= lsn;
}

/*
 * Under the lock: raise reserved to the unconfirmed mark once the synchronous
 * standbys have its record.  Returns whether it was raised now.
 */
static bool
sf_mark_publish_locked(void)
{
	uint64		tick = pg_atomic_read_u64(&sf_shared->unconfirmed);

	if (tick <= pg_atomic_read_u64(&sf_shared->reserved) || !sf_syncrep_confirmed(sf_shared->unconfirmed_lsn))
		return false;
	/* Readers must never see the new mark before the file, and the standbys, hold it. */
	pg_write_barrier();
	pg_atomic_write_u64(&sf_shared->published_lsn, sf_shared->unconfirmed_lsn);
	pg_atomic_write_u64(&sf_shared->sync_checked, (uint64) sf_wall_ns());
	pg_atomic_write_u64(&sf_shared->reserved, tick);
	pg_atomic_write_u64(&sf_shared->confirm_started, 0);
	return true;
}

/*
 * Under the lock: a mark whose file is written and whose record is at lsn now
 * waits for the synchronous standbys; published at once when none are named,
 * or when they already have it.  Returns whether it was published now.
 */
static bool
sf_mark_await_locked(uint64 mark, XLogRecPtr lsn)
{
	sf_shared->unconfirmed_lsn = lsn;
	pg_atomic_write_u64(&sf_shared->unconfirmed, mark);
	pg_atomic_write_u64(&sf_shared->confirm_started, (uint64) Max(sf_mono_ns(), 1));
	return sf_mark_publish_locked();
}

/* synchronous_standby_names as this process has it now. */
static const char *
sf_sync_names_now(void)
{
	return SyncRepStandbyNames != NULL ? SyncRepStandbyNames : "";
}

static uint32
sf_sync_names_hash(const char *names)
{
	return hash_bytes((const unsigned char *) names, (int) strlen(names));
}

/* At start-up (reserved is the mark loaded, below every ID): the names now. */
void
sf_mark_sync_startup(SnowflakeShared *shared)
{
	const char *names = sf_sync_names_now();

	pg_atomic_write_u32(&shared->sync_names_hash, sf_sync_names_hash(names));
	strlcpy(shared->sync_names, names, sizeof(shared->sync_names));
}

/*
 * Under the lock: whether synchronous_standby_names, as this process has it,
 * differs from the names reserved was confirmed under (rounds 17 and 19 of
 * the outside attack).  The published mark was confirmed by the standbys
 * named before, or by none: IDs below it would be returned though the
 * standbys named now may not have it, and a standby promoted after this
 * server's death would issue them again.  So, with standbys named now, log
 * the mark again (a new record, which they can confirm only by flushing all
 * WAL before it, the mark's earlier records included), and issue no new ID
 * until they have: reserved goes down to the mark loaded at start-up (no node
 * can issue at or below its last tick, which is above it), and the mark waits
 * as unconfirmed.  IDs already issued were covered as the old setting said; a
 * call that read reserved just before this may still issue below the old
 * value, as a commit may be released by a standby whose sender has not taken
 * in the reload yet.  Not on a standby, nor while the state is not sound: the
 * check runs again at the next look.  Returns true when it held generation
 * back; before (SF_SYNC_NAMES_LEN bytes) then has the names before.
 */
static SfSyncChange
sf_mark_sync_check_locked(char *before)
{
	const char *now = sf_sync_names_now();
	uint32		hash = sf_sync_names_hash(now);
	uint64		held;
	SfSyncChange kind;
	XLogRecPtr	lsn;

	if (RecoveryInProgress() || sf_shared->status != SF_STATE_OK || sf_shared->copied)
		return SF_SYNC_NONE;
	if (pg_atomic_read_u32(&sf_shared->sync_names_hash) == hash)
	{
		/*
		 * The same names, but perhaps other standbys (round 19, F2: FIRST 1
		 * (a, b), a dies, b is synchronous now, with no reload): the record
		 * of the published mark must be on the synchronous standbys of now,
		 * or generation waits again.
		 */
		if (now[0] == '\0' || max_wal_senders == 0 ||
			pg_atomic_read_u64(&sf_shared->reserved) <= sf_shared->floor ||
			sf_syncrep_confirmed(pg_atomic_read_u64(&sf_shared->published_lsn)))
		{
			pg_atomic_write_u64(&sf_shared->sync_checked, (uint64) sf_wall_ns());
			return SF_SYNC_NONE;
		}
		kind = SF_SYNC_STANDBYS;
		strlcpy(before, now, SF_SYNC_NAMES_LEN);
	}
	else
	{
		kind = SF_SYNC_NAMES;
		strlcpy(before, sf_shared->sync_names, SF_SYNC_NAMES_LEN);
		pg_atomic_write_u32(&sf_shared->sync_names_hash, hash);
		strlcpy(sf_shared->sync_names, now, sizeof(sf_shared->sync_names));
	}
	held = sf_mark_held();
	if (now[0] == '\0' || max_wal_senders == 0 || held == 0)
		return SF_SYNC_NONE;
	lsn = sf_mark_log((int64) held);
	/* Lowered first: no reader may see the old value once it waits. */
	if (sf_shared->floor >= pg_atomic_read_u64(&sf_shared->reserved))
		kind = SF_SYNC_NONE;
	else
		pg_atomic_write_u64(&sf_shared->reserved, sf_shared->floor);
	/* Nothing is issued beyond the floor until they confirm: that is current too. */
	pg_atomic_write_u64(&sf_shared->sync_checked, (uint64) sf_wall_ns());
	(void) sf_mark_await_locked(held, lsn);
	return kind;
}

static void
sf_mark_sync_log(SfSyncChange kind, const char *before)
{
	if (kind == SF_SYNC_NAMES)
		ereport(LOG,
				(errmsg("snowflake issues no new ID until the synchronous standbys named now confirm the durable mark"),
				 errdetail("synchronous_standby_names changed from \"%s\" to \"%s\"; the mark of the IDs not issued yet was confirmed by the standbys named before, or by none.",
						   before, sf_sync_names_now())));
	else if (kind == SF_SYNC_STANDBYS)
		ereport(LOG,
				(errmsg("snowflake issues no new ID until the synchronous standbys of now confirm the durable mark"),
				 errdetail("The synchronous standbys chosen by synchronous_standby_names \"%s\" changed, and the record of the mark of the IDs not issued yet is not on them.",
						   before)));
}

/*
 * A session, on the generation path, after it took in a reload: whether the
 * reservation was confirmed under the synchronous_standby_names it has now
 * (round 19, F1: a writer stalled in a write took in a change seconds late,
 * and sessions went on issuing from the old reservation).  Sessions that have
 * not taken in the reload yet go on as the writer says.
 */
TimestampTz sf_sync_seen_reload = 0;
bool		sf_sync_named = false;	/* as of sf_sync_seen_reload: standbys named */

bool
sf_mark_sync_recheck(void)
{
	const char *names = sf_sync_names_now();

	if (pg_atomic_read_u32(&sf_shared->sync_names_hash) != sf_sync_names_hash(names))
		return false;
	sf_sync_seen_reload = PgReloadTime;
	sf_sync_named = names[0] != '\0' && max_wal_senders > 0;
	return true;
}

/*
 * A session, on the generation path with synchronous standbys named, when
 * nobody has found the record of the published mark on the synchronous
 * standbys of now for SF_SYNC_STALE_MS (sf_mark_sync_current): whether it is
 * on them now (round 21 of the outside attack: with the writer not running,
 * stopped or starved, FIRST 1 (a, b) lost a and sessions went on issuing a
 * reservation only a had; the promoted b issued 438,112 of those IDs again).
 * The writer looks every SF_SYNC_LOOK_MS (100 ms); sessions, when nobody has
 * for SF_SYNC_STALE_MS (20 ms), which bounds how long a change goes unseen
 * while IDs are issued.  Without the lock: the mark was published, with its record, before
 * reserved was raised to it.  false: the caller takes the change in
 * (sf_mark_sync_await).
 */
bool
sf_mark_sync_look(int64 now_ns)
{
	if (pg_atomic_read_u64(&sf_shared->reserved) > sf_shared->floor)
	{
		XLogRecPtr	published;

		pg_read_barrier();
		published = pg_atomic_read_u64(&sf_shared->published_lsn);
		if (!sf_syncrep_confirmed(published))
			return false;
	}
	pg_atomic_write_u64(&sf_shared->sync_checked, (uint64) now_ns);
	return true;
}

/*
 * Wait, until deadline (monotonic ns), for the reservation to be confirmed
 * under this session's synchronous_standby_names, and on the synchronous
 * standbys of now (sf_mark_sync_current): take the change in at once when the
 * lock is free, else wait for the writer (its write may be stalled).
 */
bool
sf_mark_sync_await(int64 deadline)
{
	bool		ok = false;

	for (;;)
	{
		if (sf_mark_sync_current(sf_wall_ns()))
		{
			ok = true;
			break;
		}
		if (LWLockConditionalAcquire(sf_shared->lock, LW_EXCLUSIVE))
		{
			char		before[SF_SYNC_NAMES_LEN];
			SfSyncChange kind = sf_mark_sync_check_locked(before);

			LWLockRelease(sf_shared->lock);
			sf_mark_sync_log(kind, before);
			ConditionVariableBroadcast(&sf_shared->mark_cv);
			if (sf_mark_sync_current(sf_wall_ns()))
			{
				ok = true;
				break;
			}
		}
		if (sf_mono_ns() >= deadline)
			break;
		if (sf_shared->worker_latch != NULL)
			SetLatch(sf_shared->worker_latch);
		(void) ConditionVariableTimedSleep(&sf_shared->mark_cv, 10, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return ok;
}

/*
 * The reservation writer, at every look (every SF_SYNC_LOOK_MS while
 * standbys are named): take in a change of synchronous_standby_names, or of the standbys
 * it chooses (sf_mark_sync_check_locked).  With none named, one atomic read
 * and a hash of the setting; with some, also a look at the WAL senders,
 * under the lock.
 */
void
sf_mark_sync_check(void)
{
	char		before[SF_SYNC_NAMES_LEN];
	SfSyncChange kind;

	if (SyncRepStandbyNames == NULL || SyncRepStandbyNames[0] == '\0' || max_wal_senders == 0 ||
		pg_atomic_read_u64(&sf_shared->reserved) <= sf_shared->floor)
	{
		/* Nothing to re-confirm: only a change of the names counts. */
		if (pg_atomic_read_u32(&sf_shared->sync_names_hash) == sf_sync_names_hash(sf_sync_names_now()))
			return;
	}
	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	kind = sf_mark_sync_check_locked(before);
	LWLockRelease(sf_shared->lock);
	sf_mark_sync_log(kind, before);
	if (kind != SF_SYNC_NONE)
		ConditionVariableBroadcast(&sf_shared->mark_cv);
}

/*
 * Raise reserved to an unconfirmed mark once confirmed (wait: queue for the
 * lock, the writer; otherwise only if it is free).  Returns whether no mark
 * waits for confirmation any more.
 */
static bool
sf_mark_confirm(bool wait)
{
	bool		published;
	bool		done;

	if (pg_atomic_read_u64(&sf_shared->unconfirmed) <= pg_atomic_read_u64(&sf_shared->reserved))
		return true;
	if (wait)
		LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(sf_shared->lock, LW_EXCLUSIVE))
		return false;
	published = sf_mark_publish_locked();
	done = pg_atomic_read_u64(&sf_shared->unconfirmed) <= pg_atomic_read_u64(&sf_shared->reserved);
	LWLockRelease(sf_shared->lock);
	if (published)
		ConditionVariableBroadcast(&sf_shared->mark_cv);
	return done;
}

/*
 * Write a mark of target ticks and publish it, at once or, with synchronous
 * standbys, once they confirm it (sf_mark_confirm).  wait: queue for the lock
 * (the writer); otherwise give up when another process holds it (a caller
 * with no writer running).  Returns false when the lock was not taken or the
 * write failed; true when it succeeded or nothing was to be written (the mark
 * covers target, or a mark waits for confirmation).  Records a failure for
 * waiting callers and broadcasts the outcome.
 */
static bool
sf_mark_write(int64 target, bool wait, bool by_writer)
{
	SnowflakeStateImage img;
	SnowflakeStateResult res;
	int64		started;
	int64		took;
	uint64		slow;
	bool		import_done = false;
	bool		published = false;
	XLogRecPtr	lsn = InvalidXLogRecPtr;

	if (wait)
		LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(sf_shared->lock, LW_EXCLUSIVE))
		return false;

	/*
	 * One unconfirmed mark at a time: while the synchronous standbys have not
	 * confirmed it, nothing new is written (a stalled standby must not turn
	 * into a write and two WAL records per look, or per caller).
	 */
	if (sf_mark_publish_locked())
		published = true;
	if (target <= (int64) pg_atomic_read_u64(&sf_shared->reserved) ||
		pg_atomic_read_u64(&sf_shared->unconfirmed) > pg_atomic_read_u64(&sf_shared->reserved))
	{
		LWLockRelease(sf_shared->lock);
		if (published)
			ConditionVariableBroadcast(&sf_shared->mark_cv);
		return true;
	}

	started = sf_mono_ns();
	pg_atomic_write_u64(&sf_shared->write_started, (uint64) Max(started, 1));

	/*
	 * WAL first, so that standbys learn the mark before any commit that uses
	 * an ID beyond the old one.  (XLogInsert can only fail by PANIC here; the
	 * lock is released by the abort in any case.)
	 */
	sf_mark_log(target);
	memset(&img, 0, sizeof(img));
	img.mark = (uint64) target;
	sf_mark_clock(&img);
	img.owner = sf_shared->owner;
	img.timeline = sf_timeline_now();
	res = sf_statefile_write(&img);

	/*
	 * And again once the file holds it, before any ID beyond the old mark
	 * (round 12): a base backup whose checkpoint fell between the first
	 * record and the file's rename copied the old file and does not replay
	 * the first record, but it replays this one, so a standby built from it
	 * knows the mark before any commit that uses an ID beyond the old one.
	 */
	if (res.ok)
		lsn = sf_mark_log((int64) img.mark);

	took = sf_mono_ns() - started;
	pg_atomic_write_u64(&sf_shared->write_started, 0);
	/* The slowest recent write, forgotten by an eighth at each write. */
	slow = pg_atomic_read_u64(&sf_shared->write_slow_ns);
	pg_atomic_write_u64(&sf_shared->write_slow_ns, Max((uint64) took, slow - slow / 8));

	if (res.ok)
	{
		/* Published here, or once the synchronous standbys have the record. */
		(void) sf_mark_await_locked((uint64) target, lsn);
		pg_atomic_write_u32(&sf_shared->clock_held_recorded, img.held ? 1 : 0);
		sf_shared->file_tli = img.timeline;
		if (!by_writer)
			pg_atomic_write_u64(&sf_shared->fail_until_ns, 0);
		if (sf_shared->import_pending && (uint64) target >= sf_shared->import_mark)
		{
			sf_shared->import_pending = false;
			import_done = true;
		}
	}
	else
	{
		pg_atomic_write_u32(&sf_shared->fail_errno, (uint32) res.save_errno);
		pg_atomic_write_u32(&sf_shared->fail_step, (uint32) res.step);
		/* No writer runs: callers try again no sooner than this (the writer sets its own). */
		if (!by_writer)
			pg_atomic_write_u64(&sf_shared->fail_until_ns,
								(uint64) (sf_mono_ns() + (int64) SF_RETRY_MS * SF_NS_PER_MS));
		pg_write_barrier();
		pg_atomic_fetch_add_u64(&sf_shared->write_failures, 1);
	}
	pg_atomic_fetch_add_u64(&sf_shared->writes, 1);
	if (!by_writer)
		pg_atomic_fetch_add_u64(&sf_shared->caller_writes, 1);
	LWLockRelease(sf_shared->lock);

	ConditionVariableBroadcast(&sf_shared->mark_cv);

	if (import_done)
	{
		if (rename(SF_STATE_IMPORT_FILE, SF_STATE_IMPORTED_FILE) != 0)
			ereport(LOG,
					(errmsg("could not rename \"%s\" to \"%s\": %m", SF_STATE_IMPORT_FILE, SF_STATE_IMPORTED_FILE),
					 errdetail("Its mark is recorded; it is imported again at the next start, which changes nothing.")));
		ereport(LOG,
				(errmsg("snowflake recorded the imported durable mark: the state file now holds a mark of " INT64_FORMAT " (Unix ms)",
						target + SF_EPOCH_UNIX_MS)));
	}

	if (!res.ok && (!by_writer || sf_writer_failures == 0))
		sf_report_write(res.save_errno, res.step, LOG,
						by_writer ?
						"No ID beyond the durable high-water mark is issued until the mark can be written. "
						"The reservation writer retries less and less often (at most every 10 s); calls meanwhile wait for its next attempt or get this error at once; "
						"further failures are not logged until a write succeeds." :
						"No ID beyond the durable high-water mark is issued until the mark can be written.");
	return res.ok;
}

/*
 * The writer's outcome of a write: after a failure, how long to wait before
 * the next attempt (doubling, capped; a waiting caller wakes it sooner); after
 * a success that ends an episode of failures, one LOG with their count.
 */
static long
sf_writer_outcome(bool ok)
{
	if (ok)
	{
		if (sf_writer_failures > 0)
			ereport(LOG,
					(errmsg("snowflake state file \"%s\" written again, after %d failed attempts",
							SF_STATE_FILE, sf_writer_failures)));
		sf_writer_failures = 0;
		pg_atomic_write_u64(&sf_shared->fail_until_ns, 0);
		return 0;
	}
	sf_writer_failures++;
	return Min((long) SF_RETRY_MS << Min(sf_writer_failures - 1, 10), (long) SF_RETRY_MAX_MS);
}

/*
 * Rewrite the state file as it is, with this data directory's timeline (the
 * writer, after recovery; or after the file was removed under the running
 * server: heal).  Returns whether it was written.
 */
static bool
sf_mark_record_timeline(bool heal)
{
	SnowflakeStateImage img;
	SnowflakeStateResult res;

	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	memset(&img, 0, sizeof(img));
	img.mark = sf_mark_held();
	sf_mark_clock(&img);
	img.owner = sf_shared->owner;
	/* A copy's file keeps the timeline it was copied with (round 35: written again on a copy). */
	img.timeline = sf_shared->copied ? sf_shared->file_tli : sf_timeline_now();
	res = sf_statefile_write(&img);
	if (res.ok)
	{
		sf_shared->file_tli = img.timeline;
		pg_atomic_write_u32(&sf_shared->clock_held_recorded, img.held ? 1 : 0);
	}
	else
	{
		/* Waiting callers get this write's error (round 34, F2: they timed out with 55000). */
		pg_atomic_write_u32(&sf_shared->fail_errno, (uint32) res.save_errno);
		pg_atomic_write_u32(&sf_shared->fail_step, (uint32) res.step);
		pg_write_barrier();
		pg_atomic_fetch_add_u64(&sf_shared->write_failures, 1);	/* a rewrite failed */
	}
	pg_atomic_fetch_add_u64(&sf_shared->writes, 1);
	LWLockRelease(sf_shared->lock);
	ConditionVariableBroadcast(&sf_shared->mark_cv);

	if (res.ok && heal)
		ereport(LOG,
				(errmsg("snowflake state file \"%s\" was missing: written again from this server's memory", SF_STATE_FILE),
				 errdetail("It holds the durable mark again, " INT64_FORMAT " (Unix ms).", (int64) img.mark + SF_EPOCH_UNIX_MS)));
	if (!res.ok && sf_writer_failures == 0)
		sf_report_write(res.save_errno, res.step, LOG,
						heal ? "The state file is missing; until it is written again, the durable mark is in this server's memory only." :
						"The state file does not record this data directory's timeline yet.");
	return res.ok;
}

/* Physical or logical WAL senders streaming now. */
static int
sf_streaming_senders(int *pids)
{
	int			n = 0;

	if (WalSndCtl == NULL)
		return 0;
	for (int i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *w = &WalSndCtl->walsnds[i];
		pid_t		pid;

		SpinLockAcquire(&w->mutex);
		pid = w->state == WALSNDSTATE_STREAMING ? w->pid : 0;
		SpinLockRelease(&w->mutex);
		if (pid != 0)
			pids[n++] = (int) pid;
	}
	return n;
}

/*
 * The writer of a primary that owns its node state logs the published mark,
 * naming itself as the owner: once when it starts (after recovery, an import,
 * or an adoption), and again whenever a WAL sender streams that did not at its
 * last look (a standby connected or reconnected).  Standbys witness the owner only from such records (19b F1):
 * an idle primary's standbys need one.  A standby's replayed mark is then
 * never below the primary's file, an imported mark included (19b F3).
 */
static void
sf_mark_log_owner(void)
{
	int			size = Max(max_wal_senders, 1);
	int		   *now;
	int			n;
	bool		newcomer = false;

	if (sf_owner_pids == NULL)
		sf_owner_pids = MemoryContextAllocZero(TopMemoryContext, sizeof(int) * size * 2);
	now = sf_owner_pids + size;
	n = sf_streaming_senders(now);
	/* A sender streaming now that was not at the last look: a standby (re)connected. */
	for (int i = 0; i < n && !newcomer; i++)
	{
		newcomer = true;
		for (int j = 0; j < sf_owner_npids; j++)
			if (sf_owner_pids[j] == now[i])
				newcomer = false;
	}
	memcpy(sf_owner_pids, now, sizeof(int) * n);
	sf_owner_npids = n;
	if (sf_owner_logged && !newcomer)
		return;
	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	if (!sf_shared->copied)
		sf_wal_log_mark(pg_atomic_read_u64(&sf_shared->reserved), &sf_shared->self);
	LWLockRelease(sf_shared->lock);
	sf_owner_logged = true;
}

/* A mark for need_tick: from the later of it and the clock, reserving ahead. */
static int64
sf_mark_target(int64 need_tick)
{
	int64		now_tick = sf_watch_trusted_ms() - SF_EPOCH_UNIX_MS;

	return Min(Max(need_tick, now_tick) + sf_mark_ahead_ms(), SF_MAX_TICK);
}

/*
 * The reservation writer's look: raise the mark when generation (or a waiting
 * caller) comes within the margin of it.  Returns how long to sleep, in ms,
 * before the next look (it is woken sooner when callers need it).
 */
long
sf_mark_writer_step(bool woken)
{
	int64		now = sf_mono_ns();
	long		sleep_ms;

	/* On a standby, the upstream its WAL receiver is connected to now. */
	if (RecoveryInProgress())
		sf_mark_observe_upstream();

	/*
	 * Backing off after failed writes: until the next attempt is due, only
	 * the clock is looked at (W3), and nothing is written, logged or
	 * WAL-logged, even when a caller woke the writer (woken): a caller during
	 * the episode waits for the scheduled attempt or gets the last failure's
	 * error, so no role can turn its calls into write attempts and MARK
	 * records (F7).
	 */
	if (sf_writer_failures > 0 && now < sf_writer_retry_ns)
	{
		int64		held_ms;

		(void) sf_watch_look(sf_wall_ns(), &held_ms, false);
		return Max(Min((sf_writer_retry_ns - now) / SF_NS_PER_MS + 1, SF_WATCH_LOOK_MS), 1);
	}

	sleep_ms = sf_mark_writer_look();
	if (sf_writer_failures > 0)
	{
		sf_writer_retry_ns = sf_mono_ns() + (int64) sleep_ms * SF_NS_PER_MS;
		/* Callers wait for this attempt, or fail at once: they never wake the writer into another. */
		pg_atomic_write_u64(&sf_shared->fail_until_ns, (uint64) sf_writer_retry_ns);
	}

	/* The clock watch is looked at every second whatever the window (W3). */
	return Min(sleep_ms, SF_WATCH_LOOK_MS);
}

/*
 * The writer, while a mark waits for the synchronous standbys: how long to
 * sleep before looking again (often at first, then less often), and one LOG
 * per episode once it has waited a second.  The wait's end is logged by
 * sf_mark_confirm_logged().
 */
static long
sf_mark_confirm_wait(void)
{
	uint64		started = pg_atomic_read_u64(&sf_shared->confirm_started);
	int64		waited_ms = started == 0 ? 0 : (sf_mono_ns() - (int64) started) / SF_NS_PER_MS;

	if (waited_ms >= SF_WATCH_LOOK_MS && !sf_confirm_logged)
	{
		sf_confirm_logged = true;
		ereport(LOG,
				(errmsg("snowflake waits for the synchronous standbys to confirm the durable mark"),
				 errdetail("The state file and WAL hold a new mark; no ID beyond the last confirmed mark is issued "
						   "until the synchronous standbys (synchronous_standby_names) have flushed its record, "
						   "so that a standby promoted after this server's death never issues it again."),
				 errhint("Check the synchronous standbys and their connection, or change synchronous_standby_names.")));
	}
	return waited_ms < 100 ? 1 : waited_ms < SF_WATCH_LOOK_MS ? 10 : 100;
}

/* Whether there is nothing at all at path in the data directory (a directory or the like is a write failure, not this). */
static bool
sf_mark_file_missing(const char *path)
{
	struct stat st;

	return lstat(path, &st) != 0 && errno == ENOENT;
}

static long
sf_mark_writer_look(void)
{
	bool		state_missing;
	int64		high;
	int64		reserved;
	int64		target;
	int64		held_ms;

	/*
	 * Look at the clock even when idle: drift is taken in, a jump is seen.
	 * Record a hold, or its end, that the state file does not say yet (a
	 * caller that saw it first could not take the lock).
	 */
	(void) sf_watch_look(sf_wall_ns(), &held_ms, false);
	if (sf_watch_sync() || pg_atomic_exchange_u32(&sf_shared->clock_sync_unrecorded, 0) != 0 ||
		(pg_atomic_read_u64(&sf_shared->clock_held) != 0) !=
		(pg_atomic_read_u32(&sf_shared->clock_held_recorded) != 0))
		sf_mark_record_hold(true);

	/*
	 * In standby mode, streaming from a primary, once a record of the node
	 * state's owner has been replayed: witness it (F1/F2; 19b F1: a standby
	 * of a refused copy streams, but never from the owner).
	 */
	if (RecoveryInProgress() && !sf_shared->standby_witness && sf_owner_evidence_fresh() &&
		sf_wal_receiver_streaming())
	{
		if (sf_witness_write(&sf_shared->self))
		{
			sf_shared->standby_witness = true;
			ereport(LOG,
					(errmsg("snowflake recorded in \"%s\" that this data directory (%s) streams as a standby",
							SF_WITNESS_FILE, sf_identity_text(&sf_shared->self)),
					 errdetail("It replayed, streaming, a record of the owner of the node state (%s). "
							   "snowflake.failover_adopt adopts the node state after a promotion only where this file names the data directory itself.",
							   sf_identity_text(&sf_shared->owner))));
		}
		else if (!sf_witness_failed)
		{
			int			save_errno = errno;

			/* Logged once per writer; retried at every look. */
			sf_witness_failed = true;
			errno = save_errno;
			ereport(LOG,
					(errcode(sf_file_sqlstate(save_errno)),
					 errmsg("could not write snowflake standby witness \"%s\": %m", SF_WITNESS_FILE),
					 errdetail("Until it is written, snowflake.failover_adopt does not adopt after a promotion of this standby."),
					 errhint("Check free space, permissions and the health of the storage of the data directory.")));
		}
	}

	/*
	 * A standby looks often: a promotion may follow streaming closely, and on
	 * PostgreSQL 19 its looks are what sees the upstream of a WAL receiver
	 * that logs nothing before it exits.
	 */
	if (RecoveryInProgress() && (!sf_shared->standby_witness || sf_shared->owner_streamed))
		return Min(Max(sf_reservation_ms / 2, 10), 50);
	if (sf_shared->status != SF_STATE_OK || RecoveryInProgress())
		return Max(sf_reservation_ms / 2, 10);

	/* An adoption a caller waits for. */
	if (pg_atomic_read_u32(&sf_shared->adopt_wanted) == SF_ADOPT_WANTED)
		sf_mark_writer_adopt();

	/* The owner's record: at start, after an adoption, when a standby connects. */
	if (!sf_shared->copied)
		sf_mark_log_owner();

	/*
	 * Nodes that issued their first ID: into snowflake.nodes.  A file removed
	 * under the running server is written again from memory (round 34, F1:
	 * nothing wrote it while no node was new, nor at a clean stop, and the
	 * next start forgot the retired nodes).
	 */
	if (!sf_nodes_heal && sf_shared->nodes_known && sf_mark_file_missing(SF_NODES_FILE))
		sf_nodes_heal = true;
	sf_mark_record_nodes();

	/*
	 * The owner's file records the timeline it is on (after a promotion or an
	 * archive recovery of this data directory, or a file of 1.2): a copy taken
	 * from now on is known for one, whatever snowflake.failover_adopt says.
	 */
	state_missing = sf_mark_file_missing(SF_STATE_FILE);	/* removed under the running server: written again */
	if ((!sf_shared->copied && sf_shared->file_tli != (uint32) GetWALInsertionTimeLine()) || state_missing)
	{
		long		retry = sf_writer_outcome(sf_mark_record_timeline(state_missing));

		if (retry > 0)
			return retry;
	}

	/* A mark waiting for the synchronous standbys: publish it once they have it, write nothing new. */
	if (!sf_mark_confirm(true))
		return sf_mark_confirm_wait();
	if (sf_confirm_logged)
	{
		sf_confirm_logged = false;
		ereport(LOG,
				(errmsg("snowflake's durable mark is confirmed by the synchronous standbys: IDs beyond the old mark are issued again")));
	}

	high = Max(sf_issued_high(), (int64) pg_atomic_read_u64(&sf_shared->demand));
	reserved = (int64) pg_atomic_read_u64(&sf_shared->reserved);
	if (high < 0 || high + sf_mark_margin_ms() <= reserved)
		return Max(Min(reserved - high - sf_mark_margin_ms(), sf_reservation_ms / 2), 10);

	target = sf_mark_target(high);
	if (target <= reserved)
		return Max(sf_reservation_ms / 2, 10);	/* at the end of the ID space */
	/* 0 after a success: look again at once, generation may have moved on. */
	return sf_writer_outcome(sf_mark_write(target, true, true));
}

/* Refuse a caller whose wait for the mark did not end by its deadline. */
void
sf_mark_refuse(const char *caller)
{
	uint64		started = pg_atomic_read_u64(&sf_shared->write_started);
	uint64		confirm = pg_atomic_read_u64(&sf_shared->confirm_started);

	/* A mark written, waiting for the synchronous standbys (round 16). */
	if (started == 0 && confirm != 0 &&
		pg_atomic_read_u64(&sf_shared->unconfirmed) > pg_atomic_read_u64(&sf_shared->reserved))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s refused: the durable mark could not be raised within snowflake.max_wait_ms (%d ms)",
						caller, sf_max_wait_ms),
				 errdetail("A new durable mark is written and has waited %lld ms for the synchronous standbys (synchronous_standby_names) to flush its WAL record; "
						   "no ID beyond the last confirmed mark is issued before they do, so that a standby promoted after this server's death never issues it again.",
						   (long long) ((sf_mono_ns() - (int64) confirm) / SF_NS_PER_MS)),
				 errhint("Check the synchronous standbys and their connection, or change synchronous_standby_names.")));

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s refused: the durable mark could not be raised within snowflake.max_wait_ms (%d ms)",
					caller, sf_max_wait_ms),
			 started != 0 ?
			 errdetail("The reservation writer has been writing \"%s\" for %lld ms (a slow or stalled disk); "
					   "no ID beyond the durable high-water mark is issued before that write is complete.",
					   SF_STATE_FILE, (long long) ((sf_mono_ns() - (int64) started) / SF_NS_PER_MS)) :
			 sf_shared->worker_latch == NULL ?
			 errdetail("No reservation writer is running to raise the mark (it may be restarting); "
					   "no ID beyond the durable high-water mark is issued before the mark is raised.") :
			 errdetail("The reservation writer has not raised the mark yet; "
					   "no ID beyond the durable high-water mark is issued before the mark is raised."),
			 errhint("Check the storage of the data directory and the server log. "
					 "A larger snowflake.max_wait_ms lets calls wait longer for the write.")));
}

/*
 * Wait until the durable mark covers need_tick: wake the writer (or, when none
 * runs, write here without waiting for the lock) and sleep on the condition
 * variable until the mark is raised (true), a write fails (an error naming
 * it), or deadline_ns on the monotonic clock passes (false: the caller
 * refuses, sf_mark_refuse).  Cancel, statement timeout and postmaster death
 * end the wait at once.  A failed write refuses a generation call: it counts
 * in slot's refusals and streak (round 28, F4), when slot is given.
 */
bool
sf_mark_await(int64 need_tick, int64 deadline_ns, SnowflakeSlot *slot, int node)
{
	uint64		failures = pg_atomic_read_u64(&sf_shared->write_failures);
	uint64		demand = pg_atomic_read_u64(&sf_shared->demand);
	bool		prepared = false;

	/* Tell the writer how far to go. */
	while (demand < (uint64) need_tick &&
		   !pg_atomic_compare_exchange_u64(&sf_shared->demand, &demand, (uint64) need_tick))
		;

	for (;;)
	{
		Latch	   *latch;
		int64		left;
		int64		until;

		pg_read_barrier();
		if (need_tick <= (int64) pg_atomic_read_u64(&sf_shared->reserved))
			break;
		if (pg_atomic_read_u64(&sf_shared->write_failures) != failures)	/* a write failed */
		{
			int			save_errno;
			SnowflakeWriteStep step;

			pg_read_barrier();
			save_errno = (int) pg_atomic_read_u32(&sf_shared->fail_errno);
			step = (SnowflakeWriteStep) pg_atomic_read_u32(&sf_shared->fail_step);
			if (prepared)
				ConditionVariableCancelSleep();
			if (slot != NULL)
				sf_count_refusal(slot, node, "the durable mark could not be written");
			sf_report_write(save_errno, step, ERROR,
							"No ID beyond the durable high-water mark is issued until the mark can be written.");
		}

		/*
		 * In a failure episode, the next attempt is scheduled (fail_until):
		 * wait for it if it comes before the deadline, or give the last
		 * failure's error at once; never wake the writer (or write here)
		 * into an attempt of its own.
		 */
		until = (int64) pg_atomic_read_u64(&sf_shared->fail_until_ns);
		if (until != 0 && until > deadline_ns &&
			pg_atomic_read_u64(&sf_shared->write_failures) != 0)
		{
			if (prepared)
				ConditionVariableCancelSleep();
			if (slot != NULL)
				sf_count_refusal(slot, node, "the last write of the durable mark failed");
			pg_read_barrier();
			sf_report_write((int) pg_atomic_read_u32(&sf_shared->fail_errno),
							(SnowflakeWriteStep) pg_atomic_read_u32(&sf_shared->fail_step), ERROR,
							"The last write of the durable high-water mark failed, and the next attempt is not due "
							"within snowflake.max_wait_ms: no ID beyond the durable high-water mark is issued until the mark can be written.");
		}
		latch = (Latch *) sf_shared->worker_latch;
		if (until != 0 && sf_mono_ns() < until)
			;					/* the scheduled attempt comes: wait for it */
		else if (latch != NULL)
			SetLatch(latch);
		else if (sf_mark_write(sf_mark_target(need_tick), false, false) &&
				 need_tick <= (int64) pg_atomic_read_u64(&sf_shared->reserved))
			continue;

		left = deadline_ns - sf_mono_ns();
		if (left <= 0)	/* the deadline passed */
		{
			if (prepared)
				ConditionVariableCancelSleep();
			return false;
		}

		/* Prepare, then look again before the first sleep: no wake-up is lost. */
		if (!prepared)
		{
			ConditionVariablePrepareToSleep(&sf_shared->mark_cv);
			prepared = true;
			continue;
		}
		/* A mark waiting for the synchronous standbys is published by whoever looks: look often. */
		(void) ConditionVariableTimedSleep(&sf_shared->mark_cv,
										   Min(left / SF_NS_PER_MS + 1,
											   latch == NULL && pg_atomic_read_u64(&sf_shared->unconfirmed) >
											   pg_atomic_read_u64(&sf_shared->reserved) ? 10 : 100),
										   PG_WAIT_EXTENSION);
	}
	if (prepared)
		ConditionVariableCancelSleep();
	return true;
}

/*
 * After issuing up to last_tick: have the mark raised before generation
 * reaches it.  Wake the writer, once per mark; with no writer running, try it
 * here without waiting for the lock (and back off after a failure).
 */
void
sf_mark_nudge(int64 last_tick, int64 now_tick)
{
	Latch	   *latch;
	uint64		reserved = pg_atomic_read_u64(&sf_shared->reserved);

	latch = (Latch *) sf_shared->worker_latch;
	if (latch != NULL)
	{
		if (reserved != sf_woke_writer_at)
		{
			SetLatch(latch);
			sf_woke_writer_at = reserved;
		}
		return;
	}
	if (sf_raise_failed_tick >= 0 && now_tick - sf_raise_failed_tick < SF_RETRY_MS)
		return;
	if (RecoveryInProgress())
		return;
	if (!sf_mark_write(sf_mark_target(last_tick), false, false) &&
		pg_atomic_read_u64(&sf_shared->reserved) < (uint64) last_tick + sf_mark_margin_ms())
		sf_raise_failed_tick = now_tick;
}

/* The state file could not be read: its contents are unknown, so generation refuses. */
static void
sf_state_unreadable(SnowflakeShared *shared, const char *why)
{
	strlcpy(shared->message, why, sizeof(shared->message));
	shared->status = SF_STATE_UNREADABLE;
	ereport(WARNING,
			(errmsg("could not read snowflake state file \"%s\"", SF_STATE_FILE),
			 errdetail("%s", shared->message),
			 errhint("snowflake_next() refuses until the file can be read. Fix its permissions or the storage (or move away what is "
					 "not a regular file), then restart the server. Do not remove the file, nor \"%s\": either may hold the durable mark.",
					 SF_STATE_TMP_FILE)));
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
 * Import the mark of the cluster this one was upgraded from (pg_upgrade
 * carries neither the state file nor WAL): the operator copies the old
 * cluster's snowflake.state to snowflake.state.import in this data directory
 * before starting it.  The mark only ever goes up (the higher of the two is
 * kept), so importing a file, even the wrong one, never lowers it; a file
 * that cannot be read or is damaged stops generation until it is replaced or
 * removed.  Once recorded, the import file is renamed to
 * snowflake.state.imported.  Returns whether generation is held for a clock
 * jump (held: what the own file said).
 */
static bool
sf_mark_import(SnowflakeShared *shared, bool held, bool *imported)
{
	SnowflakeStateImage imp;
	SnowflakeStateImage img;
	SnowflakeStateResult res;
	SnowflakeReadStatus st;
	char		why[sizeof(shared->message)];

	*imported = false;
	st = sf_statefile_read_path(SF_STATE_IMPORT_FILE, true, &imp, why, sizeof(why));
	if (st == SF_READ_MISSING || shared->status != SF_STATE_OK)
		return held;
	if (st != SF_READ_OK)
	{
		shared->import_damaged = true;
		sf_state_damaged(shared, "The mark to import, \"%s\", cannot be used: %s "
						 "Replace it with the old cluster's \"%s\" and restart. Remove it instead only once the clock is "
						 "past every ID the old cluster issued (its IDs may lie ahead of the clock), or they may be issued again.",
						 SF_STATE_IMPORT_FILE, why, SF_STATE_FILE);
		return held;
	}

	memset(&img, 0, sizeof(img));
	img.mark = Max(shared->floor, imp.mark);
	img.wall_unix_ms = Max((int64) shared->clock_seen, imp.wall_unix_ms);
	img.held = held || imp.held;
	img.owner = shared->owner;
	img.timeline = shared->file_tli;
	res = sf_statefile_write(&img);
	shared->clock_seen = img.wall_unix_ms > 0 ? (uint64) img.wall_unix_ms : 0;
	*imported = true;
	if (!res.ok)
	{
		/*
		 * A write failure, not a damaged file (19b F5): generation starts above
		 * the imported mark (floor) all the same, but the durable mark stays
		 * the own file's, so no ID is issued until a mark at or above the
		 * import is written.  The writer tries (demand), backing off as for
		 * any failed write; the import file stays until then.
		 */
		shared->import_pending = true;
		shared->import_mark = img.mark;
		sf_load_own_mark = shared->floor;
		shared->floor = img.mark;
		sf_report_write(res.save_errno, res.step, WARNING,
						psprintf("The mark to import from \"%s\" (" INT64_FORMAT " Unix ms) could not be recorded yet: no ID is issued until it is. "
								 "The reservation writer retries; \"%s\" stays until the mark is written.",
								 SF_STATE_IMPORT_FILE, (int64) imp.mark + SF_EPOCH_UNIX_MS, SF_STATE_IMPORT_FILE));
		return img.held;
	}
	shared->floor = img.mark;
	if (rename(SF_STATE_IMPORT_FILE, SF_STATE_IMPORTED_FILE) != 0)
		ereport(LOG,
				(errmsg("could not rename \"%s\" to \"%s\": %m", SF_STATE_IMPORT_FILE, SF_STATE_IMPORTED_FILE),
				 errdetail("Its mark is recorded; it is imported again at the next start, which changes nothing.")));
	ereport(LOG,
			(errmsg("snowflake imported the durable mark " INT64_FORMAT " (Unix ms) from \"%s\"; generation starts above " INT64_FORMAT " (Unix ms)",
					(int64) imp.mark + SF_EPOCH_UNIX_MS, SF_STATE_IMPORT_FILE,
					(int64) img.mark + SF_EPOCH_UNIX_MS)));
	return img.held;
}

/*
 * Load the state file into shared.  A missing file is a new cluster: the file
 * is created at once, so that every later copy of this data directory carries
 * its owner.  A damaged one stops generation; it is never rewritten.
 * An import (sf_mark_import) is taken in after the own file.  Returns whether
 * a file was read (or imported); *out holds it, with the import's time and hold.
 */
static bool
sf_mark_load(SnowflakeShared *shared, SnowflakeStateImage *out)
{
	SnowflakeStateImage img;
	SnowflakeReadStatus st;
	char		why[sizeof(shared->message)];
	bool		imported;
	bool		held;
	bool		restored;

	sf_state_created_now = false;
	shared->status = SF_STATE_OK;
	shared->floor = 0;
	shared->clock_seen = 0;
	shared->copied = false;
	shared->file_tli = 0;
	shared->owner_streamed = false;
	shared->owner_streamed_port = 0;
	shared->owner_streamed_tli = 0;
	shared->owner_streamed_node = 0;
	memset(shared->owner_streamed_host, 0, sizeof(shared->owner_streamed_host));
	SpinLockAcquire(&shared->upstream_mutex);
	shared->upstream_port = 0;
	memset(shared->upstream_host, 0, sizeof(shared->upstream_host));
	SpinLockRelease(&shared->upstream_mutex);
	shared->import_pending = false;
	shared->import_damaged = false;
	shared->import_mark = 0;

	if (!sf_datadir_identity(&shared->self))
	{
		sf_state_damaged(shared, "Could not stat the data directory: %s.", strerror(errno));
		return false;
	}
	shared->owner = shared->self;
	shared->standby_witness = sf_witness_names_self(&shared->self);

	/*
	 * backup_label: this data directory is being restored from a base backup
	 * (pg_basebackup, a PITR restore; pg_rewind writes one too), so its state
	 * file and standby witness came from the backup (F2).  A witness in it
	 * proves nothing about this directory now: it goes.
	 */
	restored = access(SF_BACKUP_LABEL_FILE, F_OK) == 0;
	if (restored)
	{
		int			save_errno;

		/*
		 * Fail closed (19c F2): a witness left behind would be taken for this
		 * directory's own once backup_label is gone (a restart, a crash
		 * re-initialisation).  The server does not start; backup_label stays,
		 * so the next start removes it.
		 */
		shared->standby_witness = false;
		save_errno = unlink(SF_WITNESS_FILE) != 0 ? errno : 0;
		if (save_errno != 0 && save_errno != ENOENT)
			ereport(FATAL,
					(errcode(sf_file_sqlstate(save_errno)),
					 errmsg("could not remove snowflake standby witness \"%s\" of a restored data directory: %m", SF_WITNESS_FILE),
					 errdetail("This data directory was restored from a base backup (it has \"%s\"): the witness came from the backup, "
							   "and once \"%s\" is gone it would let snowflake.failover_adopt adopt the node state.",
							   SF_BACKUP_LABEL_FILE, SF_BACKUP_LABEL_FILE),
					 errhint("Make the file and the data directory writable, then start the server again; \"%s\" is still there, so that start removes it.",
							 SF_BACKUP_LABEL_FILE)));
		/* It logged its error; errno is only for the SQLSTATE. */
		save_errno = fsync_fname_ext(".", true, false, LOG) != 0 ? (errno != 0 ? errno : EIO) : 0;
		if (save_errno != 0)
			ereport(FATAL,
					(errcode(sf_file_sqlstate(save_errno)),
					 errmsg("could not fsync the data directory after removing snowflake standby witness \"%s\"", SF_WITNESS_FILE),
					 errhint("Check the health of the storage of the data directory, then start the server again.")));
	}

	st = sf_statefile_read(&img, why, sizeof(why));
	if (st == SF_READ_MISSING &&
		(st = sf_finish_tmp(SF_STATE_FILE, SF_STATE_TMP_FILE, "state", "the durable mark", sf_check_state_file,
							why, sizeof(why))) == SF_READ_OK)
		st = sf_statefile_read(&img, why, sizeof(why));
	if (st == SF_READ_UNREADABLE)
	{
		sf_state_unreadable(shared, why);
		return false;
	}
	if (st == SF_READ_DAMAGED)
	{
		sf_state_damaged(shared, "%s", why);
		return false;
	}
	if (st == SF_READ_MISSING)
	{
		SnowflakeStateResult res;

		memset(&img, 0, sizeof(img));
		img.wall_unix_ms = sf_wall_unix_ms();
		img.owner = shared->self;

		/*
		 * A base backup that carries no state file (round 35, F3: taken in
		 * the second before a removed file was written again, it started as
		 * the owner of the original's node, and issued its IDs again): a
		 * copy, as any base backup, recorded as one (no owner) so that it
		 * stays one once backup_label is gone.
		 */
		if (restored)
		{
			memset(&shared->owner, 0, sizeof(shared->owner));
			shared->copied = true;	/* a backup with no state file */
			img.owner = shared->owner;
		}
		/* The timeline is not known in the postmaster: the writer records it. */
		res = sf_statefile_write(&img);
		if (!res.ok && restored)
			sf_restored_copy_fatal(res, " that carries no state file");
		if (restored)
			ereport(WARNING,
					(errmsg("snowflake state file \"%s\" created in a data directory restored from a base backup that carries none: this one is a copy",
							SF_STATE_FILE),
					 errdetail("The data directory has \"%s\". The server the backup was taken from may have issued IDs under this server's node, "
							   "and the backup does not say which: its state file was missing (removed, or not written yet) when the backup was taken.",
							   SF_BACKUP_LABEL_FILE),
					 errhint("snowflake_next() refuses until the node state is adopted with snowflake_adopt_state(); see the snowflake README, "
							 "section Running a fleet.")));
		else if (!res.ok)
		{
			/*
			 * Not "damaged" (round 34, F2: a directory at the temporary
			 * file's name, or an I/O error, was reported as a damaged file,
			 * with the remedy to remove a file that was not there): a write
			 * that failed.  No ID is issued before the reservation writer
			 * has written a mark, and it retries by itself.
			 */
			sf_report_write(res.save_errno, res.step, WARNING,
							"At start: the state file does not exist and could not be created. No ID is issued until "
							"the reservation writer writes it; it retries by itself.");
		}
		else
			ereport(LOG,
					(errmsg("snowflake state file \"%s\" created; generation starts from the clock",
							SF_STATE_FILE)));
		sf_state_created_now = true;

		/*
		 * And an empty snowflake.nodes: a new server has used no node (the
		 * writer would otherwise write it as "missing", and log that).
		 * Nothing is lost if this fails: the writer writes it then.  Not in
		 * a backup that carries no state file (round 37, F1): the original
		 * used nodes it does not list, so a missing file stays missing and
		 * warns (sf_nodes_load) until the original's is put in place.
		 */
		if (sf_mark_file_missing(SF_NODES_FILE) && !restored)
		{
			SnowflakeNodesImage none;

			memset(&none, 0, sizeof(none));
			res = sf_nodes_write(&none);
			if (!res.ok)
				sf_report_write(res.save_errno, res.step, LOG,
								"At start: the reservation writer writes the node file instead.");
		}
		held = sf_mark_import(shared, false, &imported);
		if (!imported)
			return false;
		memset(out, 0, sizeof(*out));
		out->mark = shared->floor;
		out->wall_unix_ms = (int64) shared->clock_seen;
		out->held = held;
		return true;
	}

	shared->file_tli = img.timeline;
	shared->floor = img.mark;
	shared->clock_seen = img.wall_unix_ms > 0 ? (uint64) img.wall_unix_ms : 0;	/* the clock at the last write */
	if (sf_identity_same(&img.owner, &shared->self) && restored)
	{
		SnowflakeStateResult res;

		/*
		 * A base backup of this very data directory restored into it (the
		 * directory kept its inode and birth time): the file holds the
		 * backup's mark, and the original may have issued IDs beyond it
		 * after the backup.  It is a copy until snowflake_adopt_state().
		 * The file now names no directory (inode 0), so that it stays a copy
		 * once backup_label is gone (the startup process renames it).
		 */
		memset(&shared->owner, 0, sizeof(shared->owner));
		shared->copied = true;
		img.owner = shared->owner;
		res = sf_statefile_write(&img);
		if (!res.ok)			/* the copy is not recorded */
			sf_restored_copy_fatal(res, "");
		ereport(WARNING,
				(errmsg("snowflake state file \"%s\" comes from a base backup restored into this data directory: this one is a copy",
						SF_STATE_FILE),
				 errdetail("The data directory has \"%s\": its state file holds the backup's mark, and the server the backup was taken from "
						   "may have issued IDs beyond it.", SF_BACKUP_LABEL_FILE),
				 errhint("snowflake_next() refuses until the node state is adopted with snowflake_adopt_state(); see the snowflake README, section Running a fleet.")));
	}
	else if (sf_identity_same(&img.owner, &shared->self))
	{
		/* The same directory: record its identity as this build reads it, at the next write. */
		shared->owner = shared->self;
	}
	else
	{
		shared->owner = img.owner;
		shared->copied = true;
		ereport(WARNING,
				(errmsg("snowflake state file \"%s\" was written by another data directory: this one is a copy, or was moved",
						SF_STATE_FILE),
				 errdetail("The file names data directory %s; this one is %s (inode:birth time).",
						   sf_identity_text(&img.owner), sf_identity_text(&shared->self)),
				 errhint("snowflake_next() refuses until the node state is adopted; see the snowflake README, section Running a fleet.")));
	}
	ereport(LOG,
			(errmsg("snowflake generation starts above " INT64_FORMAT " (Unix ms), from a %s",
					(int64) img.mark + SF_EPOCH_UNIX_MS,
					img.clean ? "clean shutdown" : "reservation")));
	img.held = sf_mark_import(shared, img.held, &imported);
	if (imported)
	{
		img.mark = shared->floor;
		img.wall_unix_ms = (int64) shared->clock_seen;
	}
	*out = img;
	return true;
}

/*
 * Fill newly created shared memory (postmaster, at start-up and after each
 * crash re-initialisation): the mark from the state file, and every node's
 * generator just above it, so that no ID is ever issued twice.
 */
void
sf_mark_startup(SnowflakeShared *shared)
{
	uint64		start_word;
	SnowflakeStateImage img;
	bool		found;

	memset(&img, 0, sizeof(img));
	found = sf_mark_load(shared, &img);
	sf_mark_sync_startup(shared);
	pg_atomic_write_u64(&shared->reserved, shared->import_pending ? sf_load_own_mark : shared->floor);
	/* An import not written yet: the writer writes a mark at or above it (19b F5). */
	pg_atomic_write_u64(&shared->demand, shared->import_pending ? shared->import_mark : 0);
	sf_watch_startup(shared, found, &img);
	sf_nodes_load(shared);

	/* The next ID of every node lies in the first ms after the mark. */
	start_word = SF_WORD(shared->floor, SF_MAX_SEQUENCE);	/* above the mark */
	for (int i = 0; i < SF_NODE_COUNT; i++)
	{
		SnowflakeSlot *slot = &shared->slots[i].slot;

		pg_atomic_write_u64(&slot->word, start_word);
		pg_atomic_write_u64(&slot->clock_last, shared->clock_seen);
		pg_atomic_write_u64(&slot->clock_high, shared->clock_seen);
	}
}

/*
 * Clean shutdown: record the exact last ms issued (or lifted to), so a restart
 * need not wait.
 */
void
sf_mark_shutdown(SnowflakeShared *shared)
{
	SnowflakeStateImage img;
	SnowflakeStateResult res;
	uint64		last = 0;
	bool		any = false;

	uint64		start_word = SF_WORD(shared->floor, SF_MAX_SEQUENCE);

	sf_nodes_shutdown(shared);
	if (shared->status != SF_STATE_OK)
		return;					/* never overwrite a file we could not trust */

	/*
	 * Every node that issued, and every node lifted above where it started (a
	 * registry takeover, replay) though it issued nothing: the next start
	 * must begin above both.
	 */
	for (int i = 0; i < SF_NODE_COUNT; i++)
	{
		SnowflakeSlot *slot = &shared->slots[i].slot;
		uint64		word = pg_atomic_read_u64(&slot->word);

		if (pg_atomic_read_u32(&slot->used) == 0 && word <= start_word)
			continue;
		any = true;
		last = Max(last, (uint64) SF_WORD_TICK(word));
	}
	if (!any)
	{
		/* Nothing issued since start-up: the file stays, if it is there (round 34, F1). */
		if (sf_file_regular(SF_STATE_FILE))
			return;
		last = shared->floor;
	}

	memset(&img, 0, sizeof(img));
	img.mark = last;
	sf_mark_clock(&img);
	img.owner = shared->owner;
	img.timeline = shared->file_tli;	/* the postmaster does not know it: the last recorded */
	img.clean = true;
	res = sf_statefile_write(&img);
	if (!res.ok)
		sf_report_shutdown_write(res, "At shutdown: the reservation written before stays in force; the next start may wait for the clock to pass it.");
}

/*
 * Replay of a mark logged by the primary (startup process, on a standby and in
 * crash recovery): record it in this server's own state file, then lift every
 * node above it.  Only a mark the file holds is published.
 *
 * If the file cannot be written: on a standby, or on a copy of a data
 * directory (a base backup replaying the WAL it was taken with), the mark may
 * be one that only WAL holds, so recovery stops with the error (as it does
 * when PostgreSQL cannot write its own files): a restart replays this record
 * again, and the mark is never forgotten by a standby that is later promoted.
 * In a primary's own crash recovery the file already covers every ID issued
 * (each mark was logged before its write, and published only once written;
 * a stopping postmaster lowers the file to the exact last ID issued,
 * sf_mark_shutdown, which an immediate shutdown followed by crash recovery
 * shows): a record above the file's mark was either never published (its
 * write failed) or lowered at the stop, so recovery goes on with a WARNING
 * that says both (round 28, F3: it said only the first); the nodes are lifted
 * above the mark all the same, and generation passes the file's mark only
 * once a higher one is written.
 */
/*
 * The startup process: durable marks replayed in a primary's own crash
 * recovery whose write failed, and the last failure, logged once when the
 * process ends.
 */
static int	sf_replay_unwritten = 0;
static int	sf_replay_errno = 0;
static SnowflakeWriteStep sf_replay_step = SF_STEP_NONE;

static void
sf_replay_unwritten_report(int code, Datum arg)
{
	char		detail[640];

	if (sf_replay_unwritten == 0)
		return;
	snprintf(detail, sizeof(detail),
			 "While replaying durable marks in crash recovery: %d marks above the state file's could not be written. "
			 "The file covers every ID issued before the crash (a mark is used only once written, and a stopping server lowers "
			 "the file only to its last ID), so recovery goes on; no ID beyond the file's mark is issued until a higher mark is written.",
			 sf_replay_unwritten);
	sf_report_write(sf_replay_errno, sf_replay_step, WARNING, detail);
	sf_replay_unwritten = 0;
}

void
sf_mark_replayed(uint64 mark_tick, const SnowflakeIdentity *writer, uint32 writer_node)
{
	uint64		start_word = SF_WORD(mark_tick, SF_MAX_SEQUENCE);
	SnowflakeStateResult res = {true, 0, SF_STEP_NONE};
	uint32		timeline = sf_timeline_now();
	bool		own_crash;
	bool		from_owner;
	bool		new_owner;
	uint64		reserved;

	if (sf_shared == NULL)
		return;

	/*
	 * A record of an owning primary (another data directory), replayed by a
	 * standby while it streams: the primary upstream owns the node state.  The
	 * standby's file names that owner from now on (a standby re-pointed to a
	 * promoted standby that adopted follows the new owner), and the writer
	 * may witness it (19b F1).  Never in crash or archive recovery: a
	 * restored backup replays its own old records.
	 */
	from_owner = writer != NULL && StandbyMode && sf_wal_receiver_streaming() &&
		!sf_identity_same(writer, &sf_shared->self);

	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	reserved = pg_atomic_read_u64(&sf_shared->reserved);
	new_owner = from_owner && sf_shared->status == SF_STATE_OK &&
		!sf_identity_same(writer, &sf_shared->owner);
	if (mark_tick > reserved || new_owner)
	{
		/* Never write over a file found damaged: it may hold a higher mark. */
		if (sf_shared->status == SF_STATE_OK)
		{
			SnowflakeStateImage img;

			memset(&img, 0, sizeof(img));
			img.mark = Max(mark_tick, reserved);
			sf_mark_clock(&img);
			img.owner = new_owner ? *writer : sf_shared->owner;
			img.timeline = timeline;
			res = sf_statefile_write(&img);
		}
		if (res.ok)
		{
			pg_write_barrier();
			pg_atomic_write_u64(&sf_shared->reserved, Max(mark_tick, reserved));
			if (sf_shared->status == SF_STATE_OK)
				sf_shared->file_tli = timeline;
			if (new_owner)
			{
				/* Another data directory owns the node state: this one is a copy of it. */
				sf_shared->owner = *writer;
				sf_shared->copied = true;
			}
		}
	}
	if (from_owner && res.ok && sf_shared->status == SF_STATE_OK)
	{
		/*
		 * Evidence of this WAL receiver's upstream only (19c F3): the record
		 * lies at or after where it began to receive, so it came over its
		 * connection, not from a segment already in pg_wal.
		 */
		bool		streamed;
		bool		first = !sf_shared->owner_streamed;
		int			port;
		char		host[NI_MAXHOST];

		SpinLockAcquire(&WalRcv->mutex);
		streamed = !XLogRecPtrIsInvalid(WalRcv->receiveStart) && sf_wal_replay_lsn >= WalRcv->receiveStart;
		port = WalRcv->sender_port;
		memcpy(host, WalRcv->sender_host, NI_MAXHOST);
		SpinLockRelease(&WalRcv->mutex);
		/* Another receiver started meanwhile (PostgreSQL 19 clears the upstream then): no evidence. */
		if (port == 0 && host[0] == '\0')
			streamed = false;
		if (streamed)
		{
			TimeLineID	record_tli = 0;

			(void) GetCurrentReplayRecPtr(&record_tli);
			host[NI_MAXHOST - 1] = '\0';
			sf_shared->owner_streamed_tli = (uint32) record_tli;
			sf_shared->owner_streamed_node = writer_node;
			sf_shared->owner_streamed_port = port;
			memcpy(sf_shared->owner_streamed_host, host, NI_MAXHOST);
			sf_shared->owner_streamed = true;
			sf_mark_observe_upstream();
			if (first)
				ereport(LOG,
						(errmsg("snowflake replayed a record of the owner of the node state (%s) streamed from %s:%d",
								sf_identity_text(writer), host, port),
						 errdetail("After a promotion, snowflake.failover_adopt adopts the node state while the WAL receiver's last connection went to that upstream.")));
		}
	}
	own_crash = !StandbyMode && !sf_shared->copied;
	if (res.ok || own_crash)
	{
		for (int i = 0; i < SF_NODE_COUNT; i++)
		{
			pg_atomic_uint64 *word = &sf_shared->slots[i].slot.word;
			uint64		old = pg_atomic_read_u64(word);

			while (old < start_word && !pg_atomic_compare_exchange_u64(word, &old, start_word))
				;
		}
	}
	LWLockRelease(sf_shared->lock);

	if (!res.ok && own_crash)
	{
		/* One WARNING per recovery, with the count, when the startup process ends (F7). */
		if (sf_replay_unwritten++ == 0)
			before_shmem_exit(sf_replay_unwritten_report, (Datum) 0);
		sf_replay_errno = res.save_errno;
		sf_replay_step = res.step;
	}
	else if (!res.ok)
		sf_report_write(res.save_errno, res.step, ERROR,
						"While replaying a durable mark logged by the primary: recovery stops here, so that this server "
						"never forgets the mark. Once the file can be written, start the server again; replay resumes at this record.");
}

/*
 * Whether the file (the shared sets, under the lock) already holds every
 * node of img, used and retired: then replaying it writes nothing (round 11,
 * F2: a promoted standby's crash recovery replays records its standby replay
 * already wrote, and must not stop on a file it cannot write then).
 */
static bool
sf_nodes_covers(const SnowflakeNodesImage *img)
{
	for (int w = 0; w < SF_NODE_SET_WORDS; w++)
		if ((img->used[w] & ~sf_shared->nodes_used[w]) != 0 ||
			(img->retired[w] & ~sf_shared->nodes_retired[w]) != 0)
			return false;
	return true;
}

/*
 * Replay of snowflake.nodes' sets logged by the primary (startup process):
 * write them to this server's own file, where it lacks some of their nodes,
 * and flag the slots.  A standby, and any copy of it, then knows the nodes
 * its primary used and retired; a standby built from a copy before the copy
 * was adopted as a new server knows what that adoption retired.  A file found
 * damaged or unreadable is never written over (every node stays refused).
 * If the write fails: on a standby or a copy, recovery stops with the error
 * (as for a mark: a restart replays the record again, so the sets are never
 * forgotten); in a primary's own crash recovery it goes on with a WARNING
 * (the primary logged the record after writing its own file, so the file
 * holds it already unless changed since; a node it lacks waits for the
 * writer again before its first ID).
 */
void
sf_nodes_replayed(const SnowflakeNodesImage *img)
{
	SnowflakeStateResult res = {true, 0, SF_STEP_NONE};
	bool		own_recovery;

	if (sf_shared == NULL)
		return;
	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	if (sf_shared->nodes_status == SF_STATE_OK && !sf_nodes_covers(img))
	{
		res = sf_nodes_write(img);
		if (res.ok)
		{
			memcpy(sf_shared->nodes_used, img->used, sizeof(sf_shared->nodes_used));
			memcpy(sf_shared->nodes_retired, img->retired, sizeof(sf_shared->nodes_retired));
			sf_nodes_gates(sf_shared);
		}
	}
	own_recovery = !StandbyMode && !sf_shared->copied;
	LWLockRelease(sf_shared->lock);
	if (!res.ok)
		sf_report_write(res.save_errno, res.step, own_recovery ? WARNING : ERROR,
						own_recovery ?
						"While replaying the node sets in crash recovery: recovery goes on; a node the file does not record "
						"waits for the reservation writer to record it before its first ID." :
						"While replaying the node sets logged by the primary: recovery stops here, so that this server never "
						"forgets them. Once the file can be written, start the server again; replay resumes at this record.");
}

/*
 * Write the adoption (under the lock, which the caller holds): the state file
 * names this data directory as the owner.  Records a failure for waiting
 * callers like a failed raise of the mark.
 *
 * by_hand (snowflake_adopt_state()): if the node this server runs as (its
 * configuration files, published by the writer) is not one the node state
 * issued IDs under, this is a NEW server and the original may still run: its
 * used nodes are retired (retired |= used, used = {}), in snowflake.nodes
 * first; if that write fails the adoption fails.  Otherwise it replaces the
 * original (failover, move): nothing is retired.  An adoption by
 * snowflake.failover_adopt is a replacement.  *retired_now: what was retired.
 */
static SnowflakeStateResult
sf_adopt_write(SnowflakeIdentity *old_owner, bool by_hand, SnowflakeNodesImage *retired_now)
{
	SnowflakeNodesImage before;
	SnowflakeStateImage img;
	SnowflakeStateResult res = {true, 0, SF_STEP_NONE};

	memset(retired_now, 0, sizeof(*retired_now));
	if (!sf_shared->copied)
		return res;
	*old_owner = sf_shared->owner;
	memcpy(before.used, sf_shared->nodes_used, sizeof(before.used));
	memcpy(before.retired, sf_shared->nodes_retired, sizeof(before.retired));

	/* Shown by snowflake_state() as a write in progress (round 9). */
	pg_atomic_write_u64(&sf_shared->write_started, (uint64) Max(sf_mono_ns(), 1));
	if (by_hand && sf_shared->nodes_status == SF_STATE_OK && sf_nodes_any(sf_shared->nodes_used))
	{
		uint32		node = pg_atomic_read_u32(&sf_shared->server_node);

		if (node == 0 || !SF_NODE_BIT(sf_shared->nodes_used, (int) node - 1))
		{
			SnowflakeNodesImage nodes;

			for (int w = 0; w < SF_NODE_SET_WORDS; w++)
			{
				nodes.retired[w] = sf_shared->nodes_retired[w] | sf_shared->nodes_used[w];
				nodes.used[w] = 0;
			}
			/* Then its NODES record: a standby of this copy knows the retired nodes if promoted later. */
			res = sf_nodes_write_log(&nodes);
			if (res.ok)
			{
				memcpy(retired_now->retired, sf_shared->nodes_used, sizeof(retired_now->retired));
				memcpy(sf_shared->nodes_retired, nodes.retired, sizeof(sf_shared->nodes_retired));
				memset(sf_shared->nodes_used, 0, sizeof(sf_shared->nodes_used));
				sf_nodes_gates(sf_shared);
			}
		}
	}

	if (res.ok)
	{
		memset(&img, 0, sizeof(img));
		img.mark = sf_mark_held();
		sf_mark_clock(&img);
		img.owner = sf_shared->self;
		img.timeline = sf_timeline_now();
		res = sf_statefile_write(&img);
		/*
		 * Round 10, F7: the adoption failed, the directory stays a copy, and
		 * must not keep nodes retired by it: a later adoption as the
		 * original's replacement would refuse them for good.  Put the sets
		 * back (if that write fails too, they stay retired: fail closed).
		 */
		if (!res.ok && sf_nodes_any(retired_now->retired))
		{
			if (sf_nodes_write_log(&before).ok)
			{
				memcpy(sf_shared->nodes_used, before.used, sizeof(sf_shared->nodes_used));
				memcpy(sf_shared->nodes_retired, before.retired, sizeof(sf_shared->nodes_retired));
				sf_nodes_gates(sf_shared);
				memset(retired_now, 0, sizeof(*retired_now));
			}
		}
	}
	pg_atomic_write_u64(&sf_shared->write_started, 0);
	if (res.ok)
	{
		sf_shared->owner = sf_shared->self;
		sf_shared->file_tli = img.timeline;
		pg_write_barrier();
		sf_shared->copied = false;
	}
	else
	{
		pg_atomic_write_u32(&sf_shared->fail_errno, (uint32) res.save_errno);
		pg_atomic_write_u32(&sf_shared->fail_step, (uint32) res.step);
		pg_write_barrier();
		pg_atomic_fetch_add_u64(&sf_shared->write_failures, 1);
	}
	pg_atomic_fetch_add_u64(&sf_shared->writes, 1);
	return res;
}

/* The LOG of a written adoption, after the lock is released. */
static void
sf_adopt_log(const SnowflakeIdentity *old_owner, const SnowflakeNodesImage *retired_now)
{
	uint32		node = pg_atomic_read_u32(&sf_shared->server_node);

	ereport(LOG,
			(errmsg("snowflake node state adopted by this data directory (%s), from %s",
					sf_identity_text(&sf_shared->self), sf_identity_text(old_owner))));
	if (sf_nodes_any(retired_now->retired))
		ereport(LOG,
				(errmsg("snowflake node state adopted as a new server (%s): retired %s",
						node == 0 ? "no node in the configuration files" :
						psprintf("datacenter %d, machine %d in the configuration files", SF_NODE_DC((int) node - 1), SF_NODE_MC((int) node - 1)),
						sf_nodes_text(retired_now->retired)),
				 errdetail("The data directory this one was copied from issued IDs under these nodes (and may still): "
						   "this server never issues IDs under them (\"%s\").", SF_NODES_FILE)));
}

/* The writer's part of an adoption a caller asked for (after recovery). */
static void
sf_mark_writer_adopt(void)
{
	SnowflakeStateResult res;
	SnowflakeIdentity old_owner;
	SnowflakeNodesImage retired_now;
	bool		by_hand;

	uint32		wanted = SF_ADOPT_WANTED;

	LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);

	/*
	 * Take the request only while a caller still waits for it: a caller that
	 * was cancelled or timed out has withdrawn it (WANTED -> NONE), and an
	 * adoption nobody waits for is never written.  Once taken, the caller can
	 * no longer withdraw it, and its error says the adoption takes effect.
	 */
	if (!pg_atomic_compare_exchange_u32(&sf_shared->adopt_wanted, &wanted, SF_ADOPT_WRITING))
	{
		LWLockRelease(sf_shared->lock);
		return;
	}
	by_hand = pg_atomic_exchange_u32(&sf_shared->adopt_by_hand, 0) != 0;
	res = sf_adopt_write(&old_owner, by_hand, &retired_now);
	pg_atomic_write_u32(&sf_shared->adopt_wanted, SF_ADOPT_NONE);
	LWLockRelease(sf_shared->lock);
	ConditionVariableBroadcast(&sf_shared->mark_cv);

	if (!res.ok)
		sf_report_write(res.save_errno, res.step, LOG, "The data directory stays a copy: generation still refuses.");
	else
	{
		sf_owner_logged = false;	/* the new owner's record, for its standbys */
		sf_adopt_log(&old_owner, &retired_now);
	}
}

/*
 * A caller that stops waiting for an adoption withdraws its request, unless
 * the writer has taken it (then it is being written and takes effect).
 * Returns whether the request is withdrawn (or there was none).
 */
static bool
sf_adopt_withdraw(void)
{
	uint32		wanted = SF_ADOPT_WANTED;

	if (pg_atomic_compare_exchange_u32(&sf_shared->adopt_wanted, &wanted, SF_ADOPT_NONE))
	{
		pg_atomic_write_u32(&sf_shared->adopt_by_hand, 0);
		return true;
	}
	return wanted != SF_ADOPT_WRITING;
}

/*
 * Error context of a caller waiting for an adoption: an error that ends the
 * wait (cancel, statement timeout, termination) withdraws the request and
 * says truthfully whether the adoption will still take effect.
 */
static void
sf_adopt_withdraw_callback(void *arg)
{
	bool		withdrawn = sf_adopt_withdraw();

	pg_read_barrier();
	if (!sf_shared->copied)
		errcontext("the adoption of the snowflake node state was written before the wait ended: this data directory owns it");
	else if (withdrawn)
		errcontext("the adoption of the snowflake node state was withdrawn: the data directory stays a copy");
	else
		errcontext("the adoption of the snowflake node state is being written by the reservation writer and "
				   "will take effect when the write completes (snowflake_state() shows \"ok\" then)");
}

/*
 * Adopt the node state of the data directory this one was copied from: from
 * now on this data directory owns it.  The caller has checked that this is
 * what the operator wants (snowflake_adopt_state(), or
 * snowflake.failover_adopt on promotion).  The reservation writer writes it;
 * the caller waits on the condition variable, cancellably, at most
 * snowflake.max_wait_ms (at least SF_MARK_GRACE_MS), never for the lock.
 * With no writer running it writes here, if the lock is free.
 */
void
sf_state_adopt(bool by_hand)
{
	int64		deadline = sf_mono_ns() + (int64) Max(sf_max_wait_ms, SF_MARK_GRACE_MS) * SF_NS_PER_MS;
	uint64		failures = pg_atomic_read_u64(&sf_shared->write_failures);
	bool		prepared = false;

	ErrorContextCallback withdraw;

	if (!sf_shared->copied)
		return;					/* nothing to adopt: no lock, no wait */

	/* Adopting as a new server needs the nodes the original used (fail closed). */
	if (by_hand && sf_shared->nodes_status != SF_STATE_OK)
		sf_nodes_refuse("snowflake_adopt_state()");

	/*
	 * An import waiting to be read (round 5, F2): the mark it carries is
	 * taken in only at start.  Adopting first would generate from this
	 * directory's older mark, below the original's last IDs.
	 */
	if (access(SF_STATE_IMPORT_FILE, F_OK) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake cannot adopt the node state while \"%s\" waits to be imported", SF_STATE_IMPORT_FILE),
				 errdetail("The mark in \"%s\" is read only when the server starts; adopting now would generate from this data directory's older mark.",
						   SF_STATE_IMPORT_FILE),
				 errhint("Restart the server (it imports the file), then adopt.")));

	/*
	 * Any error that ends the wait (cancel, statement timeout, termination)
	 * withdraws the request first, and says whether it was withdrawn.
	 */
	withdraw.callback = sf_adopt_withdraw_callback;
	withdraw.arg = NULL;
	withdraw.previous = error_context_stack;
	error_context_stack = &withdraw;
	for (;;)
	{
		Latch	   *latch;
		int64		left;
		uint32		none = SF_ADOPT_NONE;

		pg_read_barrier();
		if (!sf_shared->copied)
			break;
		/* Ask (again: another caller that gave up may have withdrawn it). */
		if (by_hand)
			pg_atomic_write_u32(&sf_shared->adopt_by_hand, 1);
		(void) pg_atomic_compare_exchange_u32(&sf_shared->adopt_wanted, &none, SF_ADOPT_WANTED);
		if (pg_atomic_read_u64(&sf_shared->write_failures) != failures)
		{
			if (prepared)
				ConditionVariableCancelSleep();
			error_context_stack = withdraw.previous;
			(void) sf_adopt_withdraw();
			if (!sf_shared->copied)
				break;
			sf_report_write((int) pg_atomic_read_u32(&sf_shared->fail_errno),
							(SnowflakeWriteStep) pg_atomic_read_u32(&sf_shared->fail_step), ERROR,
							"The data directory stays a copy: generation still refuses.");
		}

		latch = (Latch *) sf_shared->worker_latch;
		if (latch != NULL)
			SetLatch(latch);
		else if (LWLockConditionalAcquire(sf_shared->lock, LW_EXCLUSIVE))
		{
			SnowflakeIdentity old_owner;
			SnowflakeStateResult res;
			SnowflakeNodesImage retired_now;

			pg_atomic_write_u32(&sf_shared->adopt_by_hand, 0);
			res = sf_adopt_write(&old_owner, by_hand, &retired_now);
			LWLockRelease(sf_shared->lock);
			ConditionVariableBroadcast(&sf_shared->mark_cv);
			if (prepared)
				ConditionVariableCancelSleep();
			error_context_stack = withdraw.previous;
			(void) sf_adopt_withdraw();
			if (!res.ok)
				sf_report_write(res.save_errno, res.step, ERROR, "The data directory stays a copy: generation still refuses.");
			pg_atomic_fetch_add_u64(&sf_shared->caller_writes, 1);
			sf_adopt_log(&old_owner, &retired_now);
			return;
		}

		left = deadline - sf_mono_ns();
		if (left <= 0)
		{
			bool		withdrawn;

			if (prepared)
				ConditionVariableCancelSleep();
			error_context_stack = withdraw.previous;
			withdrawn = sf_adopt_withdraw();
			if (!withdrawn && !sf_shared->copied)
				break;			/* written just now */
			if (withdrawn)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("adoption of the snowflake node state could not be written within snowflake.max_wait_ms (%d ms)",
								sf_max_wait_ms),
						 errdetail("The reservation writer had not begun to write the adoption (a slow or stalled disk, or no writer running); "
								   "the request is withdrawn and the data directory stays a copy: generation still refuses."),
						 errhint("Check the storage of the data directory and the server log, then try again. "
								 "A larger snowflake.max_wait_ms lets the call wait longer.")));
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("adoption of the snowflake node state is being written and will take effect when the write completes"),
					 errdetail("The reservation writer was writing the adoption into \"%s\" when snowflake.max_wait_ms (%d ms) ran out "
							   "(a slow or stalled disk); once that write completes this data directory owns the node state, "
							   "unless the write fails (logged).",
							   SF_STATE_FILE, sf_max_wait_ms),
					 errhint("snowflake_state() shows the state: \"ok\" once adopted.")));
		}
		if (!prepared)
		{
			ConditionVariablePrepareToSleep(&sf_shared->mark_cv);
			prepared = true;
			continue;
		}
		/* A mark waiting for the synchronous standbys is published by whoever looks: look often. */
		(void) ConditionVariableTimedSleep(&sf_shared->mark_cv,
										   Min(left / SF_NS_PER_MS + 1,
											   latch == NULL && pg_atomic_read_u64(&sf_shared->unconfirmed) >
											   pg_atomic_read_u64(&sf_shared->reserved) ? 10 : 100),
										   PG_WAIT_EXTENSION);
	}
	if (prepared)
		ConditionVariableCancelSleep();
	error_context_stack = withdraw.previous;
}

/*
 * Record in the state file whether the clock watch holds generation, with the
 * trusted time, so that a restart (or a crash) keeps a hold (watch.c).  The
 * mark is rewritten as it is.  Called by the process whose look began or
 * ended a hold and by snowflake_accept_clock(), without waiting for the lock
 * (wait = false: when a write is under way the reservation writer is woken,
 * and records it at its next look), and by the writer (wait = true).
 */
void
sf_mark_record_hold(bool wait)
{
	SnowflakeStateImage img;
	SnowflakeStateResult res;

	if (sf_shared->status != SF_STATE_OK || sf_shared->copied || RecoveryInProgress())
		return;					/* never overwrite a file we could not trust */

	if (wait)
		LWLockAcquire(sf_shared->lock, LW_EXCLUSIVE);
	else
	{
		/* A caller never writes while a writer runs: the writer records it at its next look. */
		Latch	   *latch = (Latch *) sf_shared->worker_latch;

		if (latch != NULL)
		{
			SetLatch(latch);
			return;
		}
		if (!LWLockConditionalAcquire(sf_shared->lock, LW_EXCLUSIVE))
			return;
	}
	memset(&img, 0, sizeof(img));
	img.mark = sf_mark_held();
	sf_mark_clock(&img);
	img.owner = sf_shared->owner;
	img.timeline = sf_shared->file_tli;
	res = sf_statefile_write(&img);
	if (res.ok)
		pg_atomic_write_u32(&sf_shared->clock_held_recorded, img.held ? 1 : 0);
	LWLockRelease(sf_shared->lock);

	if (!res.ok)
		sf_report_write(res.save_errno, res.step, WARNING,
						"Whether generation is held for a forward clock jump is not recorded: a restart now may trust the clock as it is.");
}
