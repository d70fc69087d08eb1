/*
 * registry.c: this server's claim on its node in the fleet's registry
 * (snowflake.registry): the C side of snowflake_claim_node() and
 * snowflake_release_node(), the rule that makes a claim count only once its
 * transaction commits, the check of the claim where an ID is taken, and the
 * background worker that takes and renews the claim.
 *
 * The claim in shared memory (SnowflakeSlot.claim_until and claim_bound) is
 * permission to generate, so it is only ever granted at commit of the
 * transaction that wrote the registry row; what restricts generation (the
 * fence of a release, the lift of a node above the high-water mark a previous
 * holder left) applies at once, and a fence is undone if its transaction
 * rolls back.  Nothing here may ereport, allocate or sleep in the commit
 * callback: the transaction is already committed there.
 *
 * It sits below the generator (which calls sf_claim_refuse) and calls only
 * downward: the slots in shared memory (words, claims), the mark's policy
 * (sf_mark_await, to make a carried mark durable) and the clocks; never the
 * state file or WAL directly.  snowflake.c registers its worker.
 *
 * The worker runs snowflake_claim_node() as snowflake.registry_role, an
 * unprivileged role, with search_path pinned to pg_catalog, pg_temp, on a
 * schema-qualified registry: code a less privileged role planted in the
 * registry's database must never run with a superuser's rights.  It must never
 * write the registry other than through snowflake_claim_node().
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

#include "snowflake.h"

PGDLLEXPORT void snowflake_claimer_main(Datum main_arg);

PG_FUNCTION_INFO_V1(snowflake_note_claim);
PG_FUNCTION_INFO_V1(snowflake_note_release);

#define SF_NODE_DC(node)	((node) / (int) (SF_MAX_MACHINE + 1))
#define SF_NODE_M(node)		((node) % (int) (SF_MAX_MACHINE + 1))

/*
 * A claim or release made by this backend's open transaction, applied to
 * shared memory at commit, dropped at abort or at the rollback of the
 * subtransaction that made it.
 */
typedef struct SfPendingClaim
{
	SubTransactionId subid;
	int			node;
	bool		release;		/* a release: the lease ends at commit */
	int64		until_ms;		/* claim: the lease's end, Unix ms */
	int64		bound_ms;		/* claim: no ID beyond this Unix ms */
	int64		fence_ms;		/* release: the bound it set at once */
	int64		restore_ms;		/* release: the bound before, restored on abort */
} SfPendingClaim;

static SfPendingClaim *sf_pending = NULL;
static int	sf_npending = 0;
static int	sf_pending_size = 0;
static bool sf_callbacks_registered = false;

/* ---- the check where an ID is taken (called from sf_reserve) ---- */

/*
 * Refuse an ID taken without a current claim (sf_claim_check in snowflake.h
 * decided): the lease ended (or was never taken), or the ID's ms passes the
 * bound of the claim.
 */
void
sf_claim_refuse(SnowflakeSlot *slot, int node, int64 now_ms, int64 last_tick, const char *caller)
{
	int64		until = (int64) pg_atomic_read_u64(&slot->claim_until);
	int64		bound = (int64) pg_atomic_read_u64(&slot->claim_bound);

	pg_atomic_fetch_add_u64(&slot->refusals, 1);

	if (until <= now_ms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s refused: this server holds no current registry claim for datacenter %d, machine %d",
						caller, SF_NODE_DC(node), SF_NODE_M(node)),
				 errdetail("snowflake.require_claim is on; the claim was never taken since start-up, was released, or its lease ended."),
				 errhint("Run SELECT snowflake_claim_node('<schema>.<registry table>'), and renew it before the lease ends (the registry worker, snowflake.registry, does both).")));

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s refused: the ID would pass the bound of this server's registry claim for datacenter %d, machine %d",
					caller, SF_NODE_DC(node), SF_NODE_M(node)),
			 errdetail("snowflake.require_claim is on; IDs under a claim may run at most snowflake.max_lead_ms (as it was when the claim was taken) past the lease's end, "
					   "here %lld ms past the bound; during a release no ID passes the last one issued.",
					   (long long) (last_tick + SF_EPOCH_UNIX_MS - bound)),
			 errhint("Renew the claim (snowflake_claim_node()), or wait for the release to commit.")));
}

/* ---- pending claims and the transaction callbacks ---- */

static void
sf_pending_add(const SfPendingClaim *claim)
{
	if (sf_npending == sf_pending_size)
	{
		int			size = Max(8, sf_pending_size * 2);

		if (sf_pending == NULL)
			sf_pending = MemoryContextAlloc(TopMemoryContext, size * sizeof(SfPendingClaim));
		else
			sf_pending = repalloc(sf_pending, size * sizeof(SfPendingClaim));
		sf_pending_size = size;
	}
	sf_pending[sf_npending++] = *claim;
}

/* Undo the fence of a release (only if nobody replaced it since). */
static void
sf_pending_undo(const SfPendingClaim *claim)
{
	SnowflakeSlot *slot;
	uint64		expected = (uint64) claim->fence_ms;

	if (!claim->release || sf_shared == NULL)
		return;
	slot = &sf_shared->slots[claim->node].slot;
	(void) pg_atomic_compare_exchange_u64(&slot->claim_bound, &expected, (uint64) claim->restore_ms);
}

static void
sf_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (sf_npending > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that claimed or released a snowflake node"),
						 errdetail("The claim is recorded in this server's shared memory when its transaction commits; a prepared transaction commits elsewhere."),
						 errhint("Claim or release the node in a transaction of its own.")));
			break;

		case XACT_EVENT_COMMIT:
			/* Already committed: no error, no allocation from here on. */
			for (int i = 0; i < sf_npending && sf_shared != NULL; i++)
			{
				SfPendingClaim *c = &sf_pending[i];
				SnowflakeSlot *slot = &sf_shared->slots[c->node].slot;

				if (c->release)
					pg_atomic_write_u64(&slot->claim_until, 0);
				else
				{
					/* The bound first: a reader of the new lease sees its bound. */
					pg_atomic_write_u64(&slot->claim_bound, (uint64) Max(c->bound_ms, 0));
					pg_write_barrier();
					pg_atomic_write_u64(&slot->claim_until, (uint64) Max(c->until_ms, 0));
				}
			}
			sf_npending = 0;
			break;

		case XACT_EVENT_ABORT:
			for (int i = sf_npending - 1; i >= 0; i--)
				sf_pending_undo(&sf_pending[i]);
			sf_npending = 0;
			break;

		default:
			break;
	}
}

static void
sf_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			kept = 0;

	switch (event)
	{
		case SUBXACT_EVENT_COMMIT_SUB:
			for (int i = 0; i < sf_npending; i++)
				if (sf_pending[i].subid == mySubid)
					sf_pending[i].subid = parentSubid;
			break;

		case SUBXACT_EVENT_ABORT_SUB:
			for (int i = sf_npending - 1; i >= 0; i--)
				if (sf_pending[i].subid == mySubid)
					sf_pending_undo(&sf_pending[i]);
			for (int i = 0; i < sf_npending; i++)
				if (sf_pending[i].subid != mySubid)
					sf_pending[kept++] = sf_pending[i];
			sf_npending = kept;
			break;

		default:
			break;
	}
}

/* The node named by the first two arguments, checked; registers the callbacks once. */
static int
sf_claim_node_arg(FunctionCallInfo fcinfo, const char *caller)
{
	int32		datacenter;
	int32		machine;

	sf_require_shared(caller);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("datacenter_id and machine_id must not be null")));
	datacenter = PG_GETARG_INT32(0);
	machine = PG_GETARG_INT32(1);
	if (datacenter < 0 || datacenter > SF_MAX_DATACENTER)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("datacenter_id must be between 0 and %d, not %d", (int) SF_MAX_DATACENTER, datacenter)));
	if (machine < 0 || machine > SF_MAX_MACHINE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("machine_id must be between 0 and %d, not %d", (int) SF_MAX_MACHINE, machine)));

	if (!sf_callbacks_registered)
	{
		RegisterXactCallback(sf_xact_callback, NULL);
		RegisterSubXactCallback(sf_subxact_callback, NULL);
		sf_callbacks_registered = true;
	}
	return datacenter * (int) (SF_MAX_MACHINE + 1) + machine;
}

/*
 * Lift the node's generator above carried_ms (the latest ms a previous holder
 * may have issued), as replay lifts slots, and make that durable: a restart
 * before the first ID must not forget it.
 */
void
sf_lift_node(SnowflakeSlot *slot, int64 carried_ms, const char *caller)
{
	int64		tick = Min(carried_ms - SF_EPOCH_UNIX_MS, SF_MAX_TICK);
	uint64		target = SF_WORD(tick, SF_MAX_SEQUENCE);
	uint64		old = pg_atomic_read_u64(&slot->word);

	if (tick < 0)
		return;
	while (old < target && !pg_atomic_compare_exchange_u64(&slot->word, &old, target))
		;
	if (tick > (int64) pg_atomic_read_u64(&sf_shared->reserved) &&
		!sf_mark_await(tick, sf_mono_ns() + (int64) Max(sf_max_wait_ms, SF_MARK_GRACE_MS) * SF_NS_PER_MS))
		sf_mark_refuse(caller);
}

/*
 * snowflake_note_claim(datacenter_id, machine_id, until, carried_ms): record a
 * registry lease that snowflake_claim_node() took, to count from the commit of
 * this transaction; carried_ms (null: none) is the high-water mark a previous
 * holder left, which the node is lifted above at once.  Returns the claim's
 * bound: until plus snowflake.max_lead_ms, in Unix ms.  (Version 1.1 calls it
 * with the first three arguments only.)
 */
Datum
snowflake_note_claim(PG_FUNCTION_ARGS)
{
	int			node = sf_claim_node_arg(fcinfo, "snowflake_note_claim()");
	TimestampTz until;
	SfPendingClaim claim = {0};

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("until must not be null")));
	until = PG_GETARG_TIMESTAMPTZ(2);
	if (TIMESTAMP_NOT_FINITE(until))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("until must be a finite timestamp")));

	claim.subid = GetCurrentSubTransactionId();
	claim.node = node;
	claim.until_ms = Max(sf_timestamptz_to_unix_ms(until), 0);
	claim.bound_ms = claim.until_ms + sf_max_lead_ms;

	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
		sf_lift_node(&sf_shared->slots[node].slot, PG_GETARG_INT64(3), "snowflake_claim_node()");

	sf_pending_add(&claim);
	PG_RETURN_INT64(claim.bound_ms);
}

/*
 * snowflake_note_release(datacenter_id, machine_id): fence the node at once (no
 * ID past the last one issued, undone if this transaction rolls back), end its
 * lease at commit, and return the last ms any ID of the node issued here may
 * carry, for the registry row.
 */
Datum
snowflake_note_release(PG_FUNCTION_ARGS)
{
	int			node = sf_claim_node_arg(fcinfo, "snowflake_note_release()");
	SnowflakeSlot *slot = &sf_shared->slots[node].slot;
	SfPendingClaim claim = {0};
	uint64		old;
	int64		tick;

	claim.subid = GetCurrentSubTransactionId();
	claim.node = node;
	claim.release = true;
	claim.restore_ms = (int64) pg_atomic_read_u64(&slot->claim_bound);
	claim.fence_ms = Min(claim.restore_ms,
						 SF_WORD_TICK(pg_atomic_read_u64(&slot->word)) + SF_EPOCH_UNIX_MS);

	/* Register first: if anything below fails, the abort restores the bound. */
	sf_pending_add(&claim);
	pg_atomic_write_u64(&slot->claim_bound, (uint64) claim.fence_ms);

	/*
	 * Seal the ms of the last ID.  A generator that read the bound before the
	 * fence fails its compare-and-swap against the sealed word, and on its
	 * next round reads the fence (sf_claim_check reads the word, then the
	 * bound); one that got in first is seen here and sealed with.
	 */
	old = pg_atomic_read_u64(&slot->word);
	for (;;)
	{
		uint64		sealed = SF_WORD(SF_WORD_TICK(old), SF_MAX_SEQUENCE);

		if (old == sealed || pg_atomic_compare_exchange_u64(&slot->word, &old, sealed))
			break;
	}
	tick = SF_WORD_TICK(old);

	PG_RETURN_INT64(tick + SF_EPOCH_UNIX_MS);
}

/* ---- settings ---- */

/* snowflake.registry: empty, or a schema-qualified table name. */
bool
sf_registry_check_hook(char **newval, void **extra, GucSource source)
{
	char	   *copy;
	List	   *names;
	bool		ok;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;

	copy = pstrdup(*newval);
	ok = SplitIdentifierString(copy, '.', &names) && list_length(names) == 2;
	if (!ok)
	{
		GUC_check_errmsg("snowflake.registry must be a schema-qualified table name, not \"%s\"", *newval);
		GUC_check_errdetail("The registry worker looks the registry up by this name; a name without a schema could find a table another role created.");
		GUC_check_errhint("Write it as schema.table, for example 'public.snowflake_registry'.");
	}
	list_free(names);
	pfree(copy);
	return ok;
}

/* ---- the background worker ---- */

/* The role the claim runs as: set, existing, and not a superuser; else an error. */
static Oid
sf_registry_role_oid(void)
{
	Oid			role;

	if (sf_registry_role == NULL || sf_registry_role[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake.registry_role is not set"),
				 errdetail("The registry worker runs the claim as that role, never as a superuser."),
				 errhint("Create an unprivileged role with EXECUTE on snowflake_claim_node() and snowflake_note_claim() and SELECT, INSERT and UPDATE on the registry, "
						 "set snowflake.registry_role to it and reload (see Running a fleet in the README).")));
	role = get_role_oid(sf_registry_role, true);
	if (!OidIsValid(role))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" named by snowflake.registry_role does not exist", sf_registry_role)));
	if (superuser_arg(role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("snowflake.registry_role \"%s\" is a superuser", sf_registry_role),
				 errdetail("Objects that other roles can create in the registry's database (triggers, tables) would run with its rights."),
				 errhint("Name an unprivileged role with only the rights the claim needs (see Running a fleet in the README).")));
	return role;
}

/* One claim or renewal, in its own transaction; false (and a warning) on failure. */
static bool
sf_claim_once(void)
{
	MemoryContext caller = CurrentMemoryContext;
	bool		ok = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "snowflake: claiming this server's node");

		if (SPI_execute("SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
						"JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
						"WHERE e.extname = 'snowflake'", true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not look up the snowflake extension");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("extension \"snowflake\" is not installed in database \"%s\"",
							sf_registry_database),
					 errhint("Run CREATE EXTENSION snowflake there, or set snowflake.registry_database.")));
		else
		{
			char	   *schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			char	   *sql = psprintf("SELECT %s.snowflake_claim_node($1::pg_catalog.regclass, "
									   "pg_catalog.make_interval(secs => $2))", schema);
			Oid			types[2] = {TEXTOID, FLOAT8OID};
			Datum		values[2];
			Oid			role = sf_registry_role_oid();
			Oid			save_userid;
			int			save_sec_context;

			values[0] = CStringGetTextDatum(sf_registry);
			values[1] = Float8GetDatum(sf_registry_lease_ms / 1000.0);

			/*
			 * As the registry role, in a security-restricted operation (as
			 * PostgreSQL runs a table owner's code in maintenance commands);
			 * an error restores the user at abort.
			 */
			GetUserIdAndSecContext(&save_userid, &save_sec_context);
			SetUserIdAndSecContext(role, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
								   SECURITY_RESTRICTED_OPERATION);
			if (SPI_execute_with_args(sql, 2, types, values, NULL, false, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not run snowflake_claim_node()");
			SetUserIdAndSecContext(save_userid, save_sec_context);
			ok = true;
		}

		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(WARNING,
				(errmsg("snowflake could not claim this server's node in registry \"%s\": %s",
						sf_registry, edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0,
				 edata->hint ? errhint("%s", edata->hint) : 0));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();

	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

void
snowflake_claimer_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(sf_registry_database, NULL, 0);

	/*
	 * Nothing a role can create may be found by an unqualified name, for the
	 * whole session: this overrides ALTER ROLE/DATABASE settings too.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);

	for (;;)
	{
		long		wait_ms;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* Renew at a third of the lease; after a failure, try again sooner. */
		if (sf_claim_once())
			wait_ms = sf_registry_lease_ms / 3;
		else
			wait_ms = Min(sf_registry_lease_ms / 10, 5000);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(wait_ms, 100),
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
