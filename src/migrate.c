/*
 * migrate.c: what snowflake_migrate_column() (SQL, version 1.3) needs from C.
 *
 * - snowflake_migrate_exec(): runs DDL as the owner of the key table, in a
 *   security-restricted operation (like REFRESH MATERIALIZED VIEW and
 *   VACUUM): the code of other roles that the DDL runs (a domain's CHECK, an
 *   index expression, a view's query during REFRESH) runs with that owner's
 *   rights and cannot SET ROLE back to the caller's, create temporary
 *   objects or change the caller's settings.
 * - snowflake_migrate_floor(): the smallest ID snowflake_next() may issue
 *   now, from the time the generator trusts; refuses while generation is held
 *   for a forward clock jump.  Reads the clock watch, changes nothing.
 * - sf_migrate_refuse_old_caller(): the migrate functions of versions 1.1
 *   and 1.2 (plain PL/pgSQL in released scripts) call
 *   snowflake_min_id(clock_timestamp()) before their first DDL; with this
 *   library, such a call while the extension is still at an older version
 *   refuses: those versions run others' code with the caller's rights.
 *
 * This file may call watch.c and shmem.c (reads only).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "snowflake.h"

PG_FUNCTION_INFO_V1(snowflake_migrate_exec);
PG_FUNCTION_INFO_V1(snowflake_migrate_floor);

/*
 * snowflake_migrate_exec(role oid, stmts text[]): runs each statement, in
 * order, as role, in a security-restricted operation with search_path
 * pg_catalog, pg_temp.  The caller must hold role's privileges (it could SET
 * ROLE to it anyway): this never lets anyone do more than they can.  Returns
 * the first column of the first row the last statement returned, as text
 * (NULL if none): the max() check reads the table this way, as its owner
 * (round 14 of the outside attack: read as the caller, a superuser, a
 * foreign table among the children connected with the caller's rights and
 * ran the remote side's code as a superuser).
 */
Datum
snowflake_migrate_exec(PG_FUNCTION_ARGS)
{
	Oid			role;
	ArrayType  *stmts;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	MemoryContext callcxt = CurrentMemoryContext;
	char	   *result = NULL;
	void	   *guard;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("role must not be null")));
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	role = PG_GETARG_OID(0);
	stmts = PG_GETARG_ARRAYTYPE_P(1);

	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role with OID %u does not exist", role)));
	if (!has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to run statements as role %s", GetUserNameFromId(role, false)),
				 errdetail("Only a role that has the privileges of role %s may run statements as it.",
						   GetUserNameFromId(role, false))));

	deconstruct_array(stmts, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
	if (nelems == 0)
		PG_RETURN_NULL();

	/*
	 * As REFRESH MATERIALIZED VIEW does: switch to the role, in a
	 * security-restricted operation, with a search_path of our own; every
	 * setting changed inside is rolled back at the end.  An error aborts the
	 * (sub)transaction, which restores the user and the settings.
	 */
	guard = sf_guard_before();
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(role, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int i = 0; i < nelems; i++)
	{
		char	   *sql;
		int			rc;

		if (nulls[i])
			continue;
		sql = TextDatumGetCString(elems[i]);
		rc = SPI_execute(sql, false, 0);
		if (rc < 0)
			elog(ERROR, "SPI_execute failed (%d) on: %s", rc, sql);
		pfree(sql);
		result = NULL;
		if (SPI_tuptable != NULL && SPI_processed > 0 && SPI_tuptable->tupdesc->natts > 0)
		{
			char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

			if (v != NULL)
				result = MemoryContextStrdup(callcxt, v);
		}
	}
	SPI_finish();

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);

	/*
	 * The owner's code may have renamed or dropped the extension's schema and
	 * made another of its name, or put an overload in it: the caller's next
	 * call by that name would run it with the caller's rights (round 17, F1).
	 */
	sf_guard_after(guard, "snowflake_migrate_column()");

	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(result));
}

/*
 * snowflake_migrate_floor(): the smallest ID that snowflake_next() may issue
 * from now on (a lower bound): the first ID of the ms the generator trusts
 * now.  Refuses while generation is held for a
 * forward jump of the clock: the wall clock then says nothing about the IDs
 * that will be issued once the hold ends.
 */
Datum
snowflake_migrate_floor(PG_FUNCTION_ARGS)
{
	int64		trusted_tick;
	int64		floor_tick;
	uint64		held;

	sf_require_shared("snowflake_migrate_column()");
	held = pg_atomic_read_u64(&sf_shared->clock_held);
	if (held != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot check existing values while generation is held for a forward clock jump of %lld ms",
						(long long) held),
				 errdetail("Existing values must be below the IDs snowflake_next() will issue; while generation is held, the wall clock does not say which those are."),
				 errhint("Wait until the clock comes back, or accept the new time with SELECT <extension schema>.snowflake_accept_clock() (with search_path pinned, as the README's section Functions shows), then migrate.")));

	trusted_tick = sf_watch_trusted_ms() - SF_EPOCH_UNIX_MS;
	floor_tick = Max(trusted_tick, 0);
	PG_RETURN_INT64(sf_make_id(floor_tick, 0, 0, 0));
}

/* The installed version of the extension that owns function fn, or NULL. */
static char *
sf_extension_version_of(Oid fn)
{
	Oid			ext = getExtensionOfObject(ProcedureRelationId, fn);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	if (!OidIsValid(ext))
		return NULL;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * Called by snowflake_min_id(): refuses the call snowflake_min_id(clock_timestamp())
 * while the extension is at 1.0, 1.1 or 1.2.  That call is how the migrate
 * functions of 1.1 and 1.2 read the current time, before their first DDL;
 * those functions run code of other roles with the caller's privileges.
 * Other calls, and every call once the extension is updated, pass.
 */
void
sf_migrate_refuse_old_caller(FunctionCallInfo fcinfo)
{
	Node	   *expr = fcinfo->flinfo ? fcinfo->flinfo->fn_expr : NULL;
	Node	   *arg;
	char	   *version;

	if (expr == NULL || !IsA(expr, FuncExpr) || list_length(((FuncExpr *) expr)->args) != 1)
		return;
	arg = linitial(((FuncExpr *) expr)->args);
	if (!IsA(arg, FuncExpr) || ((FuncExpr *) arg)->funcid != F_CLOCK_TIMESTAMP)
		return;
	version = sf_extension_version_of(fcinfo->flinfo->fn_oid);
	if (version == NULL ||
		(strcmp(version, "1.0") != 0 && strcmp(version, "1.1") != 0 && strcmp(version, "1.2") != 0))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake_migrate_column() of extension version %s cannot run with this library: ALTER EXTENSION snowflake UPDATE first",
					version),
			 errdetail("Version %s of snowflake_migrate_column() runs code of the roles that own dependent objects with your privileges; version 1.3 runs it as their owner. This refusal comes before its first DDL.",
					   version),
			 errhint("Run ALTER EXTENSION snowflake UPDATE, then migrate. (A direct call snowflake_min_id(clock_timestamp()) is refused too until then; snowflake_min_id(now()) is not.)")));
}

/*
 * snowflake_migrate_lift(max_id bigint): after the check that max_id (the
 * largest existing value of the column) sorts below the IDs issued now, lift
 * this server's node (every node while the node is unset) above max_id's ms
 * (never past the time the generator trusts now) and raise the durable mark
 * over it, as a registry takeover lifts a node
 * (sf_lift_node, registry.c): the next ID sorts above max_id even if the
 * clock comes back behind the time the check trusted, and after a restart.
 * Only ever moves forward; not undone if the transaction rolls back (an ID
 * issued later is then merely later than it had to be).
 */
PG_FUNCTION_INFO_V1(snowflake_migrate_lift);

Datum
snowflake_migrate_lift(PG_FUNCTION_ARGS)
{
	int64		max_id;
	int64		carried_ms;

	if (PG_ARGISNULL(0))
		PG_RETURN_VOID();
	max_id = PG_GETARG_INT64(0);
	if (max_id < 0)
		PG_RETURN_VOID();
	sf_require_shared("snowflake_migrate_column()");
	carried_ms = (max_id >> SF_TIMESTAMP_SHIFT) + SF_EPOCH_UNIX_MS;

	/*
	 * Never above the time the generator trusts now: the next ID would come
	 * from that ms anyway, so anyone may call this (the migration runs as the
	 * table's owner) and nobody can push the generator into the future.
	 */
	if (carried_ms > sf_watch_trusted_ms())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_id %lld is above the IDs snowflake_next() issues now", (long long) max_id),
				 errdetail("snowflake_migrate_lift() only lifts the generator up to the time it trusts now."),
				 errhint("Pass the largest existing value of a column, after checking it is below snowflake_migrate_floor().")));
	if (sf_datacenter_id != SF_NODE_UNSET && sf_machine_id != SF_NODE_UNSET)
		sf_lift_node(&sf_shared->slots[sf_datacenter_id * (int) (SF_MAX_MACHINE + 1) + sf_machine_id].slot,
					 carried_ms, "snowflake_migrate_column()");
	else
		for (int i = 0; i < SF_NODE_COUNT; i++)
			sf_lift_node(&sf_shared->slots[i].slot, carried_ms, "snowflake_migrate_column()");
	PG_RETURN_VOID();
}

/*
 * The migrate functions of versions 1.1 and 1.2 (PL/pgSQL in released
 * scripts) run code of other roles with the caller's privileges; not every
 * path of theirs calls into this library before its first DDL (the one that
 * only widens references added since does not).  So the library refuses the
 * call itself, on entry: fmgr_hook refuses the extension's function
 * snowflake_migrate_column at FHET_START, before its first statement, while
 * the extension's installed version is 1.0, 1.1 or 1.2.  Both old bodies
 * carry SET clauses, so PostgreSQL calls fmgr_hook for them without a
 * needs_fmgr_hook of ours: no other function (snowflake_next() among them)
 * pays for a look-up when it is set up or called; only functions with SET
 * clauses or SECURITY DEFINER, at each call, pay one catalog-cache look-up.
 * This needs the library loaded in the session, which
 * shared_preload_libraries (required to generate IDs) guarantees.
 */
static fmgr_hook_type prev_fmgr_hook = NULL;

/* The old version of the extension, if fn is its snowflake_migrate_column and it is older than 1.3. */
static char *
sf_old_migrate_version(Oid fn)
{
	HeapTuple	tup;
	bool		named;
	char	   *version;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tup))
		return NULL;
	named = strcmp(NameStr(((Form_pg_proc) GETSTRUCT(tup))->proname), "snowflake_migrate_column") == 0;
	ReleaseSysCache(tup);
	if (!named)
		return NULL;
	version = sf_extension_version_of(fn);
	if (version != NULL &&
		(strcmp(version, "1.0") == 0 || strcmp(version, "1.1") == 0 || strcmp(version, "1.2") == 0))
		return version;
	return NULL;
}

static void
sf_migrate_fmgr_hook(FmgrHookEventType event, FmgrInfo *flinfo, Datum *private)
{
	if (event == FHET_START)
	{
		char	   *version = sf_old_migrate_version(flinfo->fn_oid);

		if (version != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("snowflake_migrate_column() of extension version %s cannot run with this library: ALTER EXTENSION snowflake UPDATE first",
							version),
					 errdetail("Version %s of snowflake_migrate_column() runs code of the roles that own dependent objects with your privileges; version 1.3 runs it as their owner. This refusal comes before its first statement.",
							   version),
					 errhint("Run ALTER EXTENSION snowflake UPDATE, then migrate.")));
	}
	if (prev_fmgr_hook)
		prev_fmgr_hook(event, flinfo, private);
}

void
sf_migrate_init(void)
{
	prev_fmgr_hook = fmgr_hook;
	fmgr_hook = sf_migrate_fmgr_hook;
}
