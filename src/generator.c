/*
 * generator.c: hands out runs of IDs for one node, unique and strictly
 * increasing across every backend of the server.
 *
 * The hot path is one compare-and-swap on the node's word; it takes no lock
 * and writes no WAL.  A call that must wait (the ms is used up, or the clock is
 * behind the IDs already issued) sleeps with its deadline on the monotonic
 * clock, holds nothing while it sleeps, and ends at once on cancel, statement
 * timeout or postmaster death.  No ID whose ms lies beyond the durable mark is
 * ever returned: the caller waits for the reservation writer to raise it (and
 * fsync it) first, within the same deadline.  A clock before the epoch, or
 * one the clock watch holds for a forward jump, is refused at once.  Clock
 * episodes (a rollback begins and ends, a streak of refusals begins and ends)
 * make one WARNING each, written by the one backend whose compare-and-swap
 * starts or ends the episode.  This file may call mark.c, watch.c, clock.c
 * and shmem.c; it must never wrap a sequence, mask a field, write a file or
 * sleep while holding a lock.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_db_role_setting.h"
#include "catalog/pg_type.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "compat.h"
#include "snowflake.h"

/*
 * This server's node (datacenter * 32 + machine), or an error: first if the
 * library is not preloaded (SPEC rule 6), then saying which setting to set.
 * Callers of sf_reserve() get the node here, so the preload check is done once.
 */
int
sf_current_node(const char *caller)
{
	const char *unset = NULL;

	sf_require_shared(caller);

	if (sf_datacenter_id == SF_NODE_UNSET)
		unset = "snowflake.datacenter_id";
	else if (sf_machine_id == SF_NODE_UNSET)
		unset = "snowflake.machine_id";

	if (unset != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s is not set", unset),
				 errdetail("snowflake_next() needs this server's node: snowflake.datacenter_id and snowflake.machine_id, each 0 to 31."),
				 errhint("Set %s in postgresql.conf (or with ALTER SYSTEM, ALTER DATABASE or ALTER ROLE ... SET) to a value from 0 to 31 that no other live server uses, then reload.",
						 unset)));

	return sf_datacenter_id * (int) (SF_MAX_MACHINE + 1) + sf_machine_id;
}

/*
 * What a copy that replaces the original does before adopting (round 4, F2):
 * the copy's file holds an older mark than the original reached, so the
 * original's mark comes first, or the clock must be past its IDs.
 */
#define SF_ADOPT_REMEDY "stop the original, bring its mark here (put its \"" SF_STATE_FILE "\" into this data directory as \"" SF_STATE_IMPORT_FILE "\" and restart this server, or wait until the clock here is past the timestamp of every ID it issued), then run SELECT <extension schema>.snowflake_adopt_state() (with search_path pinned, as the README's section Functions shows)."

/*
 * The value of setting name (snowflake.datacenter_id or machine_id) that
 * pg_db_role_setting gives a session of this database and user connecting
 * now, in PostgreSQL's order (database and role, role, database, every
 * database and role); false if none does.  The user is the one that logged
 * in: PostgreSQL applies that user's settings at connection, and SET SESSION
 * AUTHORIZATION applies none.
 */
static bool
sf_catalog_setting(const char *name, int *value)
{
	Oid			dbs[] = {MyDatabaseId, InvalidOid, MyDatabaseId, InvalidOid};
	Oid			roles[] = {GetAuthenticatedUserId(), GetAuthenticatedUserId(), InvalidOid, InvalidOid};
	int			best = lengthof(dbs);
	size_t		len = strlen(name);
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;

	rel = table_open(DbRoleSettingRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_db_role_setting setting = (Form_pg_db_role_setting) GETSTRUCT(tuple);
		bool		isnull;
		Datum		config;
		Datum	   *items;
		bool	   *item_nulls;
		int			count;
		int			rank = 0;

		while (rank < best && !(dbs[rank] == setting->setdatabase && roles[rank] == setting->setrole))
			rank++;
		if (rank >= best)
			continue;
		config = heap_getattr(tuple, Anum_pg_db_role_setting_setconfig, RelationGetDescr(rel), &isnull);
		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT,
						  &items, &item_nulls, &count);
		for (int i = 0; i < count; i++)
		{
			char	   *item = item_nulls[i] ? NULL : TextDatumGetCString(items[i]);

			if (item != NULL && pg_strncasecmp(item, name, len) == 0 && item[len] == '=' &&
				parse_int(item + len + 1, value, 0, NULL))
				best = rank;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return best < (int) lengthof(dbs);
}

/*
 * Whether this session runs setting name (with value mine) as a session of
 * its database and user connecting now would: from the same kind of source
 * (the configuration files, or ALTER DATABASE / ALTER ROLE settings; a SET or
 * a connection option is the session's own, from before), and the same value
 * (the catalog's as it is now; the files' as the reservation writer read them
 * at the last reload, which this session has read too).
 */
static bool
sf_setting_is_current(const char *name, int mine, int files)
{
	GucSource	source = sf_guc_source(name);
	int			catalog;

	if (source > PGC_S_DATABASE_USER)
		return false;
	if (sf_catalog_setting(name, &catalog))
		return mine == catalog;
	return source <= PGC_S_ARGV && !ConfigReloadPending && mine == files;
}

/* Whether this session's node is the one a session connecting now would run as. */
static bool
sf_session_node_is_current(void)
{
	uint32		server = pg_atomic_read_u32(&sf_shared->server_node);

	if (server == 0)
		return false;
	return sf_setting_is_current("snowflake.datacenter_id", sf_datacenter_id, SF_NODE_DC((int) server - 1)) &&
		sf_setting_is_current("snowflake.machine_id", sf_machine_id, SF_NODE_MC((int) server - 1));
}

/* What a copy that becomes a new server does before adopting (rounds 7-9). */
#define SF_NEW_SERVER_STEPS "give it its own snowflake.datacenter_id and snowflake.machine_id in its configuration files, remove the node settings it carried (ALTER DATABASE and ALTER ROLE settings, functions' SET clauses) and end its prepared transactions, then run SELECT <extension schema>.snowflake_adopt_state() (with search_path pinned, as the README's section Functions shows) and open new sessions."

/*
 * Before an adoption (round 6): this session's node, where it comes from the
 * configuration files, must be the one the files say now (the reservation
 * writer's view, published at each reload).  A session reads a reload only
 * between statements: a statement that runs through one (a retry loop, or
 * "SELECT pg_reload_conf(); SELECT snowflake_adopt_state()" sent as one
 * query) would adopt and then issue IDs of the node the server ran as before,
 * which the original may still run.  A reload that changes no node id does
 * not refuse (round 7, F3): after the adoption the session issues nothing
 * until its node is the current one (sf_check_older_session()).  Settings
 * from ALTER DATABASE or ALTER ROLE are the same on every server of a cluster
 * (they replicate) and are not compared here; a session SET is the caller's
 * own choice.
 */
void
sf_check_session_node(const char *caller)
{
	uint32		server = pg_atomic_read_u32(&sf_shared->server_node);
	bool		stale = false;

	if (server != 0)
	{
		int			dc = SF_NODE_DC((int) server - 1);
		int			mc = SF_NODE_MC((int) server - 1);

		stale = (sf_guc_source("snowflake.datacenter_id") <= PGC_S_ARGV && sf_datacenter_id != dc) ||
			(sf_guc_source("snowflake.machine_id") <= PGC_S_ARGV && sf_machine_id != mc);
	}
	if (stale)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s refused: this session has not read the last configuration reload yet", caller),
				 errdetail("It runs as datacenter %d, machine %d, and takes reloaded settings at its next statement; "
						   "adopting the node state before that could issue IDs of a node this server no longer runs as.",
						   sf_datacenter_id, sf_machine_id),
				 errhint("Run the call again as a new statement.")));
}

/* The adoptions this session has been checked against. */
static uint32 sf_adoptions_seen = 0;

/*
 * This server is about to adopt the node state (round 7): every process that
 * holds a PGPROC now began before the adoption, and read its node settings
 * (the configuration files, ALTER DATABASE and ALTER ROLE settings) before it:
 * a copy's settings may still be the original's, which the operator changes
 * before adopting.  Each is noted by its pid; sf_check_older_session() checks
 * them.  Noted before the adoption takes effect: a session that could
 * generate after it is either noted or began after this.
 */
void
sf_mark_older_sessions(void)
{
	int			n = Min((int) ProcGlobal->allProcCount, sf_shared->older_count);

	for (int i = 0; i < n; i++)
		pg_atomic_write_u32(&sf_shared->older_pid[i], (uint32) ProcGlobal->allProcs[i].pid);
	pg_write_barrier();
	pg_atomic_fetch_add_u32(&sf_shared->adoptions, 1);
}

/*
 * This server adopted the node state since this session last looked (round
 * 7): a session that began before it issues no ID unless its node is the one
 * a session of its database and user connecting now gets
 * (sf_session_node_is_current()).  Otherwise its settings may be the
 * original's (a statement running since before the reload of new ids, a
 * connection opened before ALTER DATABASE gave new ids, a SET), which the
 * original may still run.  Sessions begun afterwards read the settings as
 * they are.
 */
static void
sf_check_older_session(const char *caller)
{
	uint32		adoptions = pg_atomic_read_u32(&sf_shared->adoptions);

	/* A parallel worker runs on its leader's settings: the leader's age counts. */
	PGPROC	   *session = MyProc->lockGroupLeader != NULL ? MyProc->lockGroupLeader : MyProc;
	int			i = (int) (session - ProcGlobal->allProcs);
	bool		older;

	pg_read_barrier();
	older = i < 0 || i >= sf_shared->older_count ||
		pg_atomic_read_u32(&sf_shared->older_pid[i]) == (uint32) session->pid;
	if (older && !sf_session_node_is_current())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s refused: this session began before this server adopted the node state, and its node settings are not the current ones", caller),
				 errdetail("It runs as datacenter %d, machine %d, from settings read before the adoption: they differ from those a new session of this database and user gets now "
						   "(the configuration files as last reloaded, ALTER DATABASE and ALTER ROLE settings), or came from SET or the connection. "
						   "They may be the node of the data directory this one was copied from, which may still issue its IDs.",
						   sf_datacenter_id, sf_machine_id),
				 errhint("Open a new session: it reads the node settings as they are now.")));
	sf_adoptions_seen = adoptions;
}

/* Refuse unless generation can proceed here: primary, state sound (preloading: sf_current_node). */
static void
sf_check_can_generate(const char *caller)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s during recovery", caller)));

	if (unlikely(sf_shared->copied))
	{
		int			mine;
		int			theirs;
		const char *target = sf_mark_recovery_target();

		if (sf_failover_adopt && target != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s refused: this data directory is a copy of the one that owns the node state, and %s is set",
							caller, target),
					 errdetail("snowflake.failover_adopt does not adopt after a recovery with a recovery target: a standby that stops at the target "
							   "leaves the WAL it received after it unreplayed, and with it the marks of IDs its primary issued; one whose "
							   "recovery_target_timeline is not 'latest' does not follow its upstream onto a new timeline, where the promoted upstream "
							   "may have issued IDs."),
					 errhint("If this server replaces that one for good: " SF_ADOPT_REMEDY " "
							 "If it is a new server: " SF_NEW_SERVER_STEPS)));
		if (sf_failover_adopt && !sf_mark_promoted())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s refused: this data directory is a copy of the one that owns the node state", caller),
					 errdetail("snowflake.failover_adopt adopts the node state only after this data directory streamed from a primary as a standby "
							   "and was then promoted (its timeline past the one its state file records), with fresh evidence of the owner "
							   "(a record of it replayed since this server's last start, on the last timeline replayed, from the last upstream); "
							   "this data directory was not promoted so, or its evidence is not fresh, so the original may still issue the same IDs under this node."),
					 errhint("If this server replaces that one for good: " SF_ADOPT_REMEDY " "
							 "If it is a new server: " SF_NEW_SERVER_STEPS)));
		if (sf_failover_adopt && !sf_mark_adopt_node_ok(&mine, &theirs))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s refused: the owner of the node state ran as datacenter %d, machine %d, and this server is configured as datacenter %d, machine %d",
							caller, SF_NODE_DC(theirs), SF_NODE_MC(theirs),
							mine < 0 ? -1 : SF_NODE_DC(mine), mine < 0 ? -1 : SF_NODE_MC(mine)),
					 errdetail("snowflake.failover_adopt takes over the node its primary ran as (snowflake.datacenter_id and snowflake.machine_id in the configuration files); "
							   "a standby configured otherwise would issue IDs of a node another server may still run."),
					 errhint("Give this server its primary's snowflake.datacenter_id and snowflake.machine_id in its configuration files "
							 "(ALTER SYSTEM, then SELECT pg_reload_conf()) and call again. Adopt by hand (snowflake_adopt_state()) only once "
							 "no other server runs this server's node.")));
		if (!sf_failover_adopt)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s refused: this data directory is a copy of the one that owns the node state", caller),
					 errdetail("The snowflake state file was written by another data directory (a base backup, a restored or copied data directory, or a moved one); "
							   "both could otherwise issue the same IDs under one node."),
					 errhint("If this server replaces that one for good (failover, move): " SF_ADOPT_REMEDY " "
							 "If it is a new server: " SF_NEW_SERVER_STEPS " "
							 "On standbys meant to take over, set snowflake.failover_adopt = on.")));
		sf_check_session_node(caller);
		sf_mark_older_sessions();
		sf_state_adopt(false);
	}

	/* Read after copied: an adoption notes the older sessions before it clears copied. */
	pg_read_barrier();
	if (unlikely(pg_atomic_read_u32(&sf_shared->adoptions) != sf_adoptions_seen))
		sf_check_older_session(caller);

	if (sf_shared->status == SF_STATE_UNREADABLE)
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not read snowflake state file \"%s\"", SF_STATE_FILE),
				 errdetail("%s", sf_shared->message),
				 errhint("No ID is issued until the file can be read. Fix its permissions or the storage (or move away what is not a "
						 "regular file), then restart the server. "
						 "Do not remove the file, nor \"%s\": either may hold the durable mark.", SF_STATE_TMP_FILE)));
	if (sf_shared->status != SF_STATE_OK && sf_shared->import_damaged)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snowflake state file \"%s\" is damaged", SF_STATE_FILE),
				 errdetail("%s", sf_shared->message),
				 errhint("The damaged file is \"%s\", not \"%s\": leave \"%s\" in place. Stop the server, replace \"%s\" "
						 "with the old cluster's \"%s\" (or remove it only once the clock is past every ID the old cluster issued), "
						 "and start the server.",
						 SF_STATE_IMPORT_FILE, SF_STATE_FILE, SF_STATE_FILE, SF_STATE_IMPORT_FILE, SF_STATE_FILE)));
	if (sf_shared->status != SF_STATE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snowflake state file \"%s\" is damaged", SF_STATE_FILE),
				 errdetail("%s", sf_shared->message),
				 errhint("No ID is issued until it is repaired. Stop the server, make sure the clock is past the timestamp "
						 "of every ID this server issued (an older copy of the file is no remedy: it holds an older mark), "
						 "remove the file and start the server, but only on the data directory that owns the node: "
						 "a copy of it (a restored or copied data directory, a standby) must first get its own snowflake.datacenter_id and snowflake.machine_id.")));
}

/* Set just before a repeated refusal's ERROR: snowflake.c's emit_log_hook keeps it out of the server log. */
bool		sf_quiet_error = false;


/*
 * Note the clock in the slot; count a step back once, by whoever sees it
 * first.  A rollback episode begins when the clock goes below the highest time
 * seen and ends when it is back there: one WARNING each.
 */
static inline void
sf_note_clock(SnowflakeSlot *slot, int node, uint64 seen, int64 now_ms)
{
	if (now_ms > (int64) seen)
	{
		uint64		high = pg_atomic_read_u64(&slot->clock_high);
		uint32		rolling = pg_atomic_read_u32(&slot->rolling_back);

		(void) pg_atomic_compare_exchange_u64(&slot->clock_last, &seen, (uint64) now_ms);
		if (unlikely(rolling != 0) && (uint64) now_ms >= high &&
			pg_atomic_compare_exchange_u32(&slot->rolling_back, &rolling, 0))
			ereport(WARNING,
					(errmsg("snowflake: the system clock is back at the highest time seen for datacenter %d, machine %d: the clock rollback is over",
							SF_NODE_DC(node), SF_NODE_MC(node))));
		while ((uint64) now_ms > high &&
			   !pg_atomic_compare_exchange_u64(&slot->clock_high, &high, (uint64) now_ms))
			;
	}
	else if (now_ms < (int64) seen &&
			 pg_atomic_compare_exchange_u64(&slot->clock_last, &seen, (uint64) now_ms))
	{
		uint64		back = seen - (uint64) now_ms;
		uint64		max = pg_atomic_read_u64(&slot->max_rollback);
		uint32		rolling = 0;

		pg_atomic_fetch_add_u64(&slot->rollbacks, 1);
		while (back > max &&
			   !pg_atomic_compare_exchange_u64(&slot->max_rollback, &max, back))
			;
		if (pg_atomic_compare_exchange_u32(&slot->rolling_back, &rolling, 1))
			ereport(WARNING,
					(errmsg("snowflake: the system clock went back %llu ms for datacenter %d, machine %d: "
							"IDs wait for it (up to snowflake.max_wait_ms) or are refused until it is back",
							(unsigned long long) back, SF_NODE_DC(node), SF_NODE_MC(node))));
	}
}

/*
 * Count a refusal; the SF_REFUSAL_STREAK-th in a row (no ID issued between)
 * makes one WARNING, written by the backend whose increment reached it.
 */
void
sf_count_refusal(SnowflakeSlot *slot, int node, const char *why)
{
	uint32		streak;

	pg_atomic_fetch_add_u64(&slot->refusals, 1);
	streak = pg_atomic_fetch_add_u32(&slot->refusal_streak, 1) + 1;

	/*
	 * The first refusal of a streak reaches the server log in full; the
	 * others reach only their client (snowflake.c's emit_log_hook), and the
	 * streak's end says how many there were.
	 */
	sf_quiet_error = streak > 1;
	if (streak == SF_REFUSAL_STREAK)
		ereport(WARNING,
				(errmsg("snowflake: %d calls in a row refused for datacenter %d, machine %d, the last because %s",
						SF_REFUSAL_STREAK, SF_NODE_DC(node), SF_NODE_MC(node), why)));
}

/*
 * An ID was issued: end a streak of refusals.  A streak that reached
 * SF_REFUSAL_STREAK (and so had its WARNING) ends with a WARNING with the
 * count; a shorter one of more than one call, whose repeats stayed out of the
 * server log, with a LOG line for the server log only (round 29, F1: every
 * short streak ended with a WARNING to the client too, though no streak
 * WARNING began it, as docs/operations.md says).
 */
static inline void
sf_end_refusals(SnowflakeSlot *slot, int node)
{
	uint32		streak;

	if (likely(pg_atomic_read_u32(&slot->refusal_streak) == 0))
		return;
	streak = pg_atomic_exchange_u32(&slot->refusal_streak, 0);
	if (streak > 1)
		ereport(streak >= SF_REFUSAL_STREAK ? WARNING : LOG_SERVER_ONLY,
				(errmsg("snowflake: datacenter %d, machine %d issues IDs again after %u refused calls in a row",
						SF_NODE_DC(node), SF_NODE_MC(node), streak)));
}

/* Refuse a call while the clock watch holds generation for a forward jump. */
static void
sf_refuse_jump(SnowflakeSlot *slot, int node, int64 held_ms, const char *caller)
{
	sf_count_refusal(slot, node, "the clock jumped forward");
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s refused: the system clock jumped %lld ms forward", caller, (long long) held_ms),
			 errdetail("The wall clock is %lld ms ahead of the time trusted (the boot clock plus the wall clock's offset from it when it was last trusted), "
					   "more than snowflake.max_clock_jump_ms (%d ms) allows; "
					   "no ID is issued at the new time, and none is reserved beyond the old one, until the clock comes back "
					   "or the new time is accepted.",
					   (long long) held_ms, sf_max_clock_jump_ms),
			 errhint("If the new time is wrong, correct the clock: generation resumes by itself. "
					 "If it is right, a superuser runs SELECT <extension schema>.snowflake_accept_clock() (with search_path pinned, as the README's section Functions shows).")));
}

/* Refuse a call while the clock reads a time before the Snowflake epoch. */
static void
sf_refuse_epoch(SnowflakeSlot *slot, int node, int64 now_tick, const char *caller)
{
	sf_count_refusal(slot, node, "the clock is before the Snowflake epoch");
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s refused: the system clock is before the Snowflake epoch, %s", caller, SF_MIN_TEXT),
			 errdetail("The clock reads %lld ms before the epoch; a Snowflake ID cannot hold an earlier time.",
					   (long long) -now_tick),
			 errhint("Check the server's time synchronisation.")));
}

/*
 * Refuse a call whose wait cannot end within snowflake.max_wait_ms: because the
 * clock went back below the highest time seen, or because the IDs asked for
 * need a later ms than the lead and the wait allow (a frozen clock, a large run).
 */
static void
sf_refuse(SnowflakeSlot *slot, int node, uint64 old, int64 last_tick, int64 now_tick, const char *caller)
{
	int64		now_ms = now_tick + SF_EPOCH_UNIX_MS;
	int64		back = (int64) pg_atomic_read_u64(&slot->clock_high) - now_ms;
	int64		behind = SF_WORD_TICK(old) - now_tick;

	sf_count_refusal(slot, node, behind > sf_max_lead_ms ? "the clock is behind the IDs issued" : "no timestamp was free");

	/* Behind the IDs by more than this session's lead: the clock is the problem. */
	if (behind > sf_max_lead_ms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s refused: the system clock is behind the IDs already issued", caller),
				 back > 0 ?
				 errdetail("The clock went back %lld ms; it is %lld ms behind the last ID issued for datacenter %d, machine %d, "
						   "and waiting for it would take longer than snowflake.max_wait_ms (%d ms).",
						   (long long) back, (long long) behind,
						   node / (int) (SF_MAX_MACHINE + 1), node % (int) (SF_MAX_MACHINE + 1),
						   sf_max_wait_ms) :
				 errdetail("The clock is %lld ms behind the last ID issued or reserved for datacenter %d, machine %d "
						   "(IDs ran ahead of it: a lead taken under snowflake.max_lead_ms, the durable mark after a crash, "
						   "or the mark a promoted standby took over), and waiting for it would take longer than "
						   "snowflake.max_wait_ms (%d ms).",
						   (long long) behind,
						   node / (int) (SF_MAX_MACHINE + 1), node % (int) (SF_MAX_MACHINE + 1),
						   sf_max_wait_ms),
				 errhint("Check the server's time synchronisation. Waiting longer (snowflake.max_wait_ms) lets the clock catch up.")));

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s refused: no timestamp free within snowflake.max_wait_ms (%d ms)", caller, sf_max_wait_ms),
			 errdetail("The IDs asked for need the clock to reach %lld ms past the current ms; each ms holds 4096 IDs per node, "
					   "and snowflake.max_lead_ms (%d ms) lets IDs run that far ahead of the clock.",
					   (long long) (last_tick - now_tick), sf_max_lead_ms),
			 errhint("Raise snowflake.max_wait_ms or snowflake.max_lead_ms, or ask for fewer IDs at once.")));
}

/*
 * Refuse a node this server must never issue (snowflake.nodes): retired when
 * this data directory was adopted as a new server, or unknown because the
 * file is damaged or could not be read.
 */
pg_noreturn static void
sf_refuse_retired(SnowflakeSlot *slot, int node, const char *caller)
{
	if (pg_atomic_read_u32(&slot->retired) == SF_RETIRED_UNKNOWN)
	{
		sf_count_refusal(slot, node, "the snowflake node file is damaged or unreadable");
		sf_nodes_refuse(caller);
	}
	sf_count_refusal(slot, node, "the node is retired on this server");
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s refused: datacenter %d, machine %d is retired on this server",
					caller, SF_NODE_DC(node), SF_NODE_MC(node)),
			 errdetail("This data directory was adopted as a new server (snowflake_adopt_state()), and the data directory it was copied from "
					   "issued IDs under this node (and may still); \"%s\" lists the nodes retired here.", SF_NODES_FILE),
			 errhint("Run as this server's own node (snowflake.datacenter_id and snowflake.machine_id in its configuration files). "
					 "The setting that chose the retired node came with the copy or from the application: a function's SET clause, "
					 "a database or role setting, a connection option (PGOPTIONS), SET or set_config().")));
}

/*
 * Reserve count consecutive IDs of node; returns the generator word of the
 * first.  Every word returned lies above every word returned before, by any
 * backend, and at or below the durable mark.
 */
uint64
sf_reserve(int node, int64 count, const char *caller)
{
	SnowflakeSlot *slot;
	int64		deadline = 0;	/* monotonic ns; the call's wait budget, once it waits */
	bool		waited = false;
	bool		marked = false;
	uint64		old;
	uint64		first;
	uint64		anchor = 0;
	int64		last_tick;
	int64		now_tick;

	sf_check_can_generate(caller);
	slot = &sf_shared->slots[node].slot;
	/*
	 * A node retired here (snowflake.nodes), none known not to be, or not
	 * recorded as used yet (its first ID waits until the file holds it): the
	 * slot's cache line, no lock.
	 */
	if (unlikely(pg_atomic_read_u32(&slot->retired) != SF_RETIRED_NO))
	{
		if (pg_atomic_read_u32(&slot->retired) == SF_RETIRED_UNRECORDED)
			sf_nodes_await(node, caller);
		if (pg_atomic_read_u32(&slot->retired) != SF_RETIRED_NO)
			sf_refuse_retired(slot, node, caller);
	}

	for (;;)
	{
		uint64		seen = pg_atomic_read_u64(&slot->clock_last);
		int64		now_ns;
		int64		now_ms;
		int64		held_ms;

		old = pg_atomic_read_u64(&slot->word);
		now_ns = sf_wall_ns();
		now_ms = now_ns / SF_NS_PER_MS;
		now_tick = now_ms - SF_EPOCH_UNIX_MS;

		/* A clock that jumped forward is held: nothing at the new time. */
		if (unlikely(sf_watch_check(now_ns, &held_ms) != SF_WATCH_SAME))
			sf_mark_record_hold(false);
		if (unlikely(held_ms != 0))
			sf_refuse_jump(slot, node, held_ms, caller);
		if (unlikely(now_tick < 0))
			sf_refuse_epoch(slot, node, now_tick, caller);
		sf_note_clock(slot, node, seen, now_ms);

		/*
		 * The run starts at the current ms, or right after the last ID.  Once
		 * a call has waited, its run stays anchored where it first began: a
		 * run longer than the clock allows is issued when the clock reaches
		 * its end, as single calls would have been, instead of chasing it.
		 */
		first = Max(old + 1, waited ? anchor : SF_WORD(now_tick, 0));
		last_tick = SF_WORD_TICK(first + (uint64) (count - 1));

		if (last_tick > SF_MAX_TICK)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("%s refused: the timestamp would pass the last one a Snowflake ID can hold, %s",
							caller, SF_MAX_TEXT),
					 errhint("Check the system clock.")));

		/* The claim is checked here, with this round's clock, not before a wait. */
		if (sf_require_claim)
			sf_claim_check(slot, node, now_ms, last_tick, caller);

		/* Too far ahead of the clock: sleep until it catches up, or refuse. */
		if (last_tick > now_tick + sf_max_lead_ms)
		{
			int64		target_ms = last_tick - sf_max_lead_ms + SF_EPOCH_UNIX_MS;

			if (!waited)
			{
				anchor = first;
				waited = true;
			}
			if (deadline == 0)
				deadline = sf_mono_ns() + (int64) sf_max_wait_ms * SF_NS_PER_MS;
			if (!sf_sleep_until(target_ms * SF_NS_PER_MS, deadline))
				sf_refuse(slot, node, old, last_tick, now_tick, caller);
			continue;
		}

		/*
		 * This session took in a synchronous_standby_names the reservation
		 * was not confirmed under (round 19, F1): wait until it is, within the
		 * same budget.
		 */
		if (unlikely(!sf_mark_sync_current(now_ns)))
		{
			if (deadline == 0)
				deadline = sf_mono_ns() + (int64) sf_max_wait_ms * SF_NS_PER_MS;
			marked = true;
			if (!sf_mark_sync_await(deadline))
			{
				sf_count_refusal(slot, node, "the durable mark could not be raised");
				sf_mark_refuse(caller);
			}
			continue;
		}

		/*
		 * Beyond the durable mark: wait for the writer to raise it (rare: it
		 * keeps the mark ahead), within the same budget.
		 */
		if (last_tick > (int64) pg_atomic_read_u64(&sf_shared->reserved))
		{
			if (deadline == 0)
				deadline = sf_mono_ns() + (int64) sf_max_wait_ms * SF_NS_PER_MS;
			marked = true;
			if (!sf_mark_await(last_tick, Max(deadline, sf_mono_ns() + SF_MARK_GRACE_MS * SF_NS_PER_MS), slot, node))
			{
				sf_count_refusal(slot, node, "the durable mark could not be raised");
				sf_mark_refuse(caller);
			}
			continue;
		}

		if (pg_atomic_compare_exchange_u64(&slot->word, &old, first + (uint64) (count - 1)))
			break;
	}

	/* A node's first ID since start-up: the writer records it in snowflake.nodes. */
	if (unlikely(pg_atomic_read_u32(&slot->used) == 0) && pg_atomic_exchange_u32(&slot->used, 1) == 0)
		sf_mark_note_used();
	sf_end_refusals(slot, node);
	if (waited || marked)
		pg_atomic_fetch_add_u64(&slot->waits, 1);

	/*
	 * Half a window left: have the mark raised early, off this path (the
	 * writer also looks on its own, with a margin sized from its writes).
	 */
	if (last_tick + sf_reservation_ms / 2 > (int64) pg_atomic_read_u64(&sf_shared->reserved))
		sf_mark_nudge(last_tick, now_tick);

	return first;
}
