/*
 * snowflake.c: the module's entry point, its settings and its hooks.
 *
 * _PG_init only defines settings and, when loaded through
 * shared_preload_libraries, installs the shared memory hooks, the WAL
 * resource manager and the background workers.  The hooks create the shared
 * memory (shmem.c) and fill it from the state file (mark.c).  Nothing here
 * touches shared memory or files but through those files.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "compat.h"
#include "snowflake.h"

SNOWFLAKE_MODULE_MAGIC;

int			sf_datacenter_id = SF_NODE_UNSET;
int			sf_machine_id = SF_NODE_UNSET;
int			sf_max_lead_ms = 0;
int			sf_max_wait_ms = 10000;
int			sf_reservation_ms = 1000;
bool		sf_failover_adopt = false;
bool		sf_require_claim = false;
char	   *sf_registry = NULL;
char	   *sf_registry_database = NULL;
char	   *sf_registry_role = NULL;
int			sf_registry_lease_ms = 300000;
int			sf_max_clock_jump_ms = SF_MAX_CLOCK_JUMP_DEFAULT;

static int	sf_debug_clock_reads = 0;	/* shown by its hook, never set */

static emit_log_hook_type prev_emit_log_hook = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

/*
 * A repeated refusal in a streak (generator.c sets sf_quiet_error just
 * before it) reaches its client in full and stays out of the server log: a
 * held or behind clock must not flood the log.  The streak's first refusal
 * and its end (with the count) are logged.
 */
static void
sf_emit_log(ErrorData *edata)
{
	/*
	 * A WAL receiver logs "started streaming" once it knows its upstream:
	 * note that upstream (PostgreSQL 19 forgets it when the next receiver
	 * starts, and a short connection may end between two looks of the writer).
	 */
	if (MyBackendType == B_WAL_RECEIVER)
		sf_mark_observe_upstream();
	if (sf_quiet_error && edata->elevel >= ERROR)
	{
		sf_quiet_error = false;
		if (edata->elevel == ERROR)
			edata->output_to_server = false;
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/* SHOW snowflake.debug_clock_reads: this backend's clock reads, for tests. */
static const char *
sf_show_clock_reads(void)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), UINT64_FORMAT, sf_clock_reads);
	return buf;
}

/* Ask for our space and lock. */
static void
sf_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(sf_shmem_size());
	RequestNamedLWLockTranche(sf_shmem_tranche(), 1);
}

/* Clean shutdown (postmaster): every child has exited, so the slots hold the last IDs. */
static void
sf_shmem_shutdown(int code, Datum arg)
{
	/* A crash (code != 0) keeps the reservation mark as it is on disk. */
	if (code != 0 || sf_shared == NULL)
		return;
	sf_mark_shutdown(sf_shared);
}

/* Create or attach; on creation, start every node above the durable mark. */
static void
sf_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	if (sf_shmem_init())
		sf_mark_startup(sf_shared);
	LWLockRelease(AddinShmemInitLock);

	/* Only the postmaster records the exact last value at clean shutdown. */
	if (!IsUnderPostmaster)
		on_shmem_exit(sf_shmem_shutdown, (Datum) 0);
}

void
_PG_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = sf_emit_log;

	DefineCustomIntVariable("snowflake.debug_clock_reads",
							"Clock reads (wall and boot clock) by this session so far; read-only, for tests.",
							NULL,
							&sf_debug_clock_reads,
							0, 0, INT_MAX,
							PGC_INTERNAL, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							NULL, NULL, sf_show_clock_reads);

	DefineCustomIntVariable("snowflake.datacenter_id",
							"Datacenter id (0..31) of this server's node; -1 means unset.",
							"snowflake_next() refuses while it is unset.",
							&sf_datacenter_id,
							SF_NODE_UNSET, SF_NODE_UNSET, (int) SF_MAX_DATACENTER,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.machine_id",
							"Machine id (0..31) of this server's node; -1 means unset.",
							"snowflake_next() refuses while it is unset.",
							&sf_machine_id,
							SF_NODE_UNSET, SF_NODE_UNSET, (int) SF_MAX_MACHINE,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.max_lead_ms",
							"How far an issued ID's timestamp may run ahead of the wall clock.",
							"0 keeps the original design: 4096 IDs per ms, then wait for the next ms. "
							"A lead taken by one session is shared by every session of that node.",
							&sf_max_lead_ms,
							0, 0, SF_MAX_LEAD_LIMIT,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.max_wait_ms",
							"The longest one call may wait for the clock before it refuses.",
							"Covers waits for the next ms and for a clock that went back. 0 refuses instead of waiting.",
							&sf_max_wait_ms,
							10000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.reservation_ms",
							"How far ahead of issued IDs the durable high-water mark is written.",
							"One fsync per half window while IDs are generated; after a crash, "
							"generation may wait up to this long for the clock to pass the mark.",
							&sf_reservation_ms,
							1000, 10, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.max_clock_jump_ms",
							"The largest forward step of the wall clock that generation takes in silently.",
							"A larger step, measured against the boot clock, holds generation at the old time until the clock "
							"comes back or a superuser runs snowflake_accept_clock(). 0 turns the check off.",
							&sf_max_clock_jump_ms,
							SF_MAX_CLOCK_JUMP_DEFAULT, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("snowflake.failover_adopt",
							 "Adopt the node state of the data directory this one was copied from, on the first ID after recovery.",
							 "Set it on a standby meant to take over its primary's node on promotion. "
							 "Without it, a copied data directory refuses to generate until snowflake_adopt_state() is run.",
							 &sf_failover_adopt,
							 false,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("snowflake.require_claim",
							 "Generate only for nodes this server holds a current registry claim for.",
							 "Claims are taken and renewed with snowflake_claim_node(); see Running a fleet in the README.",
							 &sf_require_claim,
							 false,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	/* In every process that loads the module, preloaded or not. */
	sf_type_init();
	sf_migrate_init();
	sf_guard_init();

	if (!process_shared_preload_libraries_in_progress)
	{
		MarkGUCPrefixReserved("snowflake");
		return;
	}

	/* Settings read at server start only: they can exist only when preloaded. */
	DefineCustomStringVariable("snowflake.registry",
							   "The fleet's registry table; when set, a background worker claims and renews this server's node in it.",
							   "A schema-qualified table name (schema.table) in snowflake.registry_database. Empty: no worker.",
							   &sf_registry,
							   "",
							   PGC_POSTMASTER, 0,
							   sf_registry_check_hook, NULL, NULL);

	DefineCustomStringVariable("snowflake.registry_role",
							   "The role the registry worker claims as: an unprivileged role, never a superuser.",
							   "It needs EXECUTE on snowflake_claim_node() and snowflake_note_claim() and SELECT, INSERT, UPDATE on the registry. "
							   "Empty (the default): the worker claims nothing and says so.",
							   &sf_registry_role,
							   "",
							   PGC_SIGHUP, 0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("snowflake.registry_database",
							   "The database in which the registry worker runs snowflake_claim_node().",
							   NULL,
							   &sf_registry_database,
							   "postgres",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.registry_lease_ms",
							"The lease the registry worker claims; it renews at a third of it.",
							NULL,
							&sf_registry_lease_ms,
							300000, 3000, 86400000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	/* Last: it removes placeholders of names not defined by now. */
	MarkGUCPrefixReserved("snowflake");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sf_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sf_shmem_startup;
	sf_wal_register(sf_mark_replayed, sf_nodes_replayed);
	sf_worker_register();
	sf_registry_tokens_init();
	if (sf_registry != NULL && sf_registry[0] != '\0')
		sf_bgworker_register("snowflake registry claimer", "snowflake_claimer_main",
							 BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION,
							 BgWorkerStart_RecoveryFinished, 5);
}
