/*
 * guard.c: the extension's schema keeps its name and its contents while the
 * extension is in it (outside attack on issue 19, round 17).
 *
 * The functions a superuser runs (the migration, claims and releases, the
 * repair after pg_upgrade), the jsonb cast and the documented administrative
 * calls name the extension's objects by the schema they were created in.  The
 * owner of that schema (on PostgreSQL 15 and later, public belongs to the
 * database's owner) could rename it, or drop it with everything in it, and
 * make a new schema of the old name whose look-alikes those calls then run
 * with their callers' rights: during a migration, from the owner's own CHECK
 * function; from another session; or before a superuser's next call.
 *
 * - snowflake_schema_guard(): an event trigger at ddl_command_start for ALTER
 *   SCHEMA, DROP SCHEMA and DROP OWNED that refuses to rename or drop the
 *   extension's schema, or to drop what its owner owns, for every role.  A
 *   superuser who must can DROP EXTENSION first, or disable the trigger.
 * - sf_guard_before() and sf_guard_after(): around the owner's statements in
 *   snowflake_migrate_exec(): the extension is still in the schema it was
 *   in, under the same name (even where event triggers do not fire), and the
 *   owner's code made no function or operator in that schema.
 *
 * This file calls nothing else of the extension.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "access/xact.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/wait_event.h"
#include "storage/lmgr.h"
#include "utils/timestamp.h"
#include "tcop/cmdtag.h"
#include "tcop/utility.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "snowflake.h"

PG_FUNCTION_INFO_V1(snowflake_schema_guard);
PG_FUNCTION_INFO_V1(snowflake_schema_guard_end);

/* The schema extension snowflake is in, or InvalidOid when it is not installed. */
static Oid
sf_extension_schema(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("snowflake"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/* what: "rename schema", "drop schema", "drop the objects of the owner of schema", "drop extension \"x\" and with it schema", "add to extension \"x\" schema" */
static void
sf_guard_refuse(const char *what, const char *schema)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("cannot %s \"%s\": extension snowflake is in it", what, schema),
			 errdetail("The extension's functions, and the calls its documentation gives, name its objects by this schema's name: "
					   "a schema made under the name later would run its look-alikes with their callers' rights."),
			 errhint("A superuser can DROP EXTENSION snowflake first, or ALTER EVENT TRIGGER snowflake_schema_guard DISABLE for the change.")));
}

/*
 * Whether schema nsp is a member of extension extname (round 19, F1: the
 * database's owner made public a member of a trusted extension of its own,
 * ALTER EXTENSION ... ADD SCHEMA, before or after snowflake was installed;
 * dropping that extension dropped public, snowflake and the superuser's
 * tables with it, and a new public held look-alikes).
 */
static bool
sf_guard_member_of(Oid nsp, const char *extname)
{
	Oid			ext = get_extension_oid(extname, true);

	return OidIsValid(ext) && getExtensionOfObject(NamespaceRelationId, nsp) == ext;
}

/*
 * snowflake_schema_guard(): event trigger, ddl_command_start, tags ALTER
 * SCHEMA, DROP SCHEMA, DROP OWNED, ALTER EXTENSION and DROP EXTENSION.
 */
Datum
snowflake_schema_guard(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Node	   *tree;
	Oid			nsp;
	char	   *name;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("snowflake_schema_guard() runs only as an event trigger")));
	trigdata = (EventTriggerData *) fcinfo->context;
	tree = trigdata->parsetree;
	nsp = sf_extension_schema();
	if (!OidIsValid(nsp) || tree == NULL)
		PG_RETURN_VOID();
	name = get_namespace_name(nsp);
	if (name == NULL)
		PG_RETURN_VOID();

	if (IsA(tree, RenameStmt))
	{
		RenameStmt *stmt = (RenameStmt *) tree;

		if (stmt->renameType == OBJECT_SCHEMA && stmt->subname != NULL && strcmp(stmt->subname, name) == 0)
			sf_guard_refuse("rename schema", name);
	}
	else if (IsA(tree, DropStmt))
	{
		DropStmt   *stmt = (DropStmt *) tree;
		ListCell   *lc;

		if (stmt->removeType == OBJECT_SCHEMA)
			foreach(lc, stmt->objects)
			{
				Node	   *obj = (Node *) lfirst(lc);

				if (IsA(obj, String) && strcmp(strVal(obj), name) == 0)
					sf_guard_refuse("drop schema", name);
			}
		else if (stmt->removeType == OBJECT_EXTENSION)
			foreach(lc, stmt->objects)
			{
				Node	   *obj = (Node *) lfirst(lc);

				if (IsA(obj, String) && sf_guard_member_of(nsp, strVal(obj)))
					sf_guard_refuse(psprintf("drop extension \"%s\" and with it schema", strVal(obj)), name);
			}
	}
	else if (IsA(tree, AlterExtensionContentsStmt))
	{
		AlterExtensionContentsStmt *stmt = (AlterExtensionContentsStmt *) tree;

		if (stmt->action > 0 && stmt->objtype == OBJECT_SCHEMA && IsA(stmt->object, String) &&
			strcmp(strVal(stmt->object), name) == 0)
			sf_guard_refuse(psprintf("add to extension \"%s\" schema", stmt->extname), name);
	}
	else if (IsA(tree, DropOwnedStmt))
	{
		DropOwnedStmt *stmt = (DropOwnedStmt *) tree;
		HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
		Oid			owner;
		ListCell   *lc;

		if (!HeapTupleIsValid(tup))
			PG_RETURN_VOID();
		owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
		ReleaseSysCache(tup);
		foreach(lc, stmt->roles)
		{
			RoleSpec   *role = lfirst(lc);

			if (get_rolespec_oid(role, true) == owner)
				sf_guard_refuse("drop the objects of the owner of schema", name);
		}
	}
	PG_RETURN_VOID();
}

/* A function or operator in a schema (sf_guard_objects). */
typedef struct SfGuardObject
{
	Oid			catalog;		/* ProcedureRelationId or OperatorRelationId */
	Oid			oid;
	char	   *name;
	bool		written_here;	/* made or changed by this transaction */
} SfGuardObject;

/* The functions and operators in nsp, read from the catalogs as they are now. */
static List *
sf_guard_objects(Oid nsp)
{
	static const Oid catalogs[] = {ProcedureRelationId, OperatorRelationId};
	List	   *objs = NIL;

	for (int i = 0; i < lengthof(catalogs); i++)
	{
		Relation	rel = table_open(catalogs[i], AccessShareLock);
		SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
		HeapTuple	tup;

		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			SfGuardObject *o;
			Oid			in;

			if (catalogs[i] == ProcedureRelationId)
				in = ((Form_pg_proc) GETSTRUCT(tup))->pronamespace;
			else
				in = ((Form_pg_operator) GETSTRUCT(tup))->oprnamespace;
			if (in != nsp)
				continue;
			o = palloc(sizeof(SfGuardObject));
			o->catalog = catalogs[i];
			if (catalogs[i] == ProcedureRelationId)
			{
				o->oid = ((Form_pg_proc) GETSTRUCT(tup))->oid;
				o->name = pstrdup(NameStr(((Form_pg_proc) GETSTRUCT(tup))->proname));
			}
			else
			{
				o->oid = ((Form_pg_operator) GETSTRUCT(tup))->oid;
				o->name = pstrdup(NameStr(((Form_pg_operator) GETSTRUCT(tup))->oprname));
			}
			o->written_here = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data));
			objs = lappend(objs, o);
		}
		systable_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	return objs;
}

/*
 * A function in the extension's schema that is not the extension's own, that
 * this transaction made or changed, and that has the name of one of its own
 * there (older ones do not stop unrelated DDL, such as moving them out:
 * pg_catalog.snowflake_check_schema() refuses calls while they are there): a look-alike, or
 * an overload a call by that name may pick (with a type that matches better)
 * or find ambiguous; any: made or changed by anyone, committed (the catalog
 * snapshot).  Returns its name, or NULL.
 */
static char *
sf_guard_lookalike(Oid ext, Oid nsp, bool any)
{
	List	   *own = NIL;		/* the extension's functions */
	List	   *names = NIL;	/* their names in nsp, each once */
	Relation	rel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	ListCell   *lc;

	/* Looked up by name, not by scanning pg_proc: this runs at the end of every DDL command. */
	rel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, DependReferenceIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->classid == ProcedureRelationId && dep->deptype == DEPENDENCY_EXTENSION)
			own = lappend_oid(own, dep->objid);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	foreach(lc, own)
	{
		HeapTuple	ptup = SearchSysCache1(PROCOID, ObjectIdGetDatum(lfirst_oid(lc)));
		ListCell   *nc;
		bool		seen = false;
		char	   *name;

		if (!HeapTupleIsValid(ptup))
			continue;
		if (((Form_pg_proc) GETSTRUCT(ptup))->pronamespace != nsp)
		{
			ReleaseSysCache(ptup);
			continue;
		}
		name = pstrdup(NameStr(((Form_pg_proc) GETSTRUCT(ptup))->proname));
		ReleaseSysCache(ptup);
		foreach(nc, names)
			if (strcmp((char *) lfirst(nc), name) == 0)
				seen = true;
		if (!seen)
			names = lappend(names, name);
	}

	foreach(lc, names)
	{
		char	   *name = lfirst(lc);
		CatCList   *list = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(name));
		bool		lookalike = false;

		/*
		 * A function of that name that is not the extension's and that this
		 * transaction made or changed: a look-alike, or an overload a call
		 * by that name may pick or find ambiguous.  (Functions only: an
		 * operator is found by its operands' types too; the migration's
		 * check, sf_guard_after, still counts operators.)
		 */
		for (int i = 0; i < list->n_members && !lookalike; i++)
		{
			HeapTuple	ftup = &list->members[i]->tuple;
			Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(ftup);

			lookalike = proc->pronamespace == nsp && !list_member_oid(own, proc->oid) &&
				(any || TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(ftup->t_data)));
		}
		ReleaseSysCacheList(list);
		if (lookalike)
			return name;

		/*
		 * A type of that name (round 21: a domain public.snowflake_timestamp):
		 * a call whose argument does not match the function's type exactly,
		 * but converts to the type's without a function (an untyped literal,
		 * a snowflake for a bigint), is taken for a cast to it, and a
		 * domain's CHECK runs with the caller's rights.  Tables and views
		 * make row types of their names too.
		 */
		tup = SearchSysCache2(TYPENAMENSP, CStringGetDatum(name), ObjectIdGetDatum(nsp));
		if (HeapTupleIsValid(tup))
		{
			lookalike = (any || TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data))) &&
				getExtensionOfObject(TypeRelationId, ((Form_pg_type) GETSTRUCT(tup))->oid) != ext;
			ReleaseSysCache(tup);
			if (lookalike)
				return name;
		}
	}
	return NULL;
}

/*
 * Refuses when this transaction made a look-alike in the extension's schema,
 * or (any: after the install's or update's script) when one is there at all,
 * committed by a transaction the install waited for (sf_guard_lookalike).
 */
static void
sf_guard_lookalike_refuse(bool any)
{
	Oid			ext = get_extension_oid("snowflake", true);
	Oid			nsp = sf_extension_schema();
	char	   *name;
	char	   *lookalike;

	if (!OidIsValid(ext) || !OidIsValid(nsp) || (name = get_namespace_name(nsp)) == NULL)
		return;
	lookalike = sf_guard_lookalike(ext, nsp, any);
	if (lookalike != NULL && any)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("schema %s holds a function or type %s named like a function of extension snowflake", name, lookalike),
				 errdetail("It was made while the extension's script ran; a call of the extension's by that name could pick it, or be taken for a cast to it, with the caller's rights."),
				 errhint("Drop it, rename it or move it to another schema, then install or update again.")));
	if (lookalike != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_FUNCTION),
				 errmsg("cannot have \"%s\" in schema \"%s\": extension snowflake has a function of that name there", lookalike, name),
				 errdetail("A call of the extension's by that name could pick it (a function), or be taken for a cast to it (a type, a table's or a view's row type), and run it with the caller's rights, or find the call ambiguous."),
				 errhint("Name it otherwise, or put it in another schema.")));
}

/*
 * snowflake_schema_guard_end(): event trigger, ddl_command_end.  No function
 * that is not the extension's may come to have the name of one of its own in
 * its schema, whoever makes, renames or moves it (round 18, F1: an
 * overload that the migration's call by name picked, run as the superuser; F5:
 * one that made the documented calls ambiguous).
 */
Datum
snowflake_schema_guard_end(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("snowflake_schema_guard_end() runs only as an event trigger")));
	sf_guard_lookalike_refuse(false);
	PG_RETURN_VOID();
}

/*
 * Whether tree is EXPLAIN ANALYZE of CREATE TABLE AS or CREATE MATERIALIZED
 * VIEW, which makes a table and its row type but raises no event-trigger
 * event (round 22 of the outside attack: a row type named like one of the
 * extension's functions got past the event trigger this way).
 */
static bool
sf_guard_explain_creates(Node *tree)
{
	Node	   *query;

	if (!IsA(tree, ExplainStmt))
		return false;
	query = ((ExplainStmt *) tree)->query;
	if (IsA(query, Query) && ((Query *) query)->commandType == CMD_UTILITY)
		query = ((Query *) query)->utilityStmt;
	return query != NULL && IsA(query, CreateTableAsStmt);
}

/*
 * The same refusals in every session of a server that preloads the library,
 * whatever the event triggers (round 18, F2): a rename or drop of a schema
 * first takes the schema's lock, so that it waits for an extension being
 * created in it (a concurrent CREATE EXTENSION, whose event triggers that
 * statement looked up before they existed), and then looks again.
 */
static ProcessUtility_hook_type sf_prev_utility = NULL;

/*
 * The install lock (round 23 of the outside attack).  Until the superuser's
 * CREATE EXTENSION snowflake (or ALTER EXTENSION snowflake UPDATE) commits,
 * its event triggers exist for no other session, so the database's owner
 * could make a look-alike (a domain public.snowflake_timestamp) after the
 * script's check and commit it; the superuser's pinned, qualified call then
 * ran its CHECK with the superuser's rights.  So every DDL statement holds
 * this lock shared to the end of its transaction, the install and the update
 * hold it exclusive: they wait for transactions that made anything to end
 * (sf_guard_install_lock_exclusive), no DDL starts until they commit, and when their script is done they look
 * at what is committed (sf_guard_lookalike_refuse).  A lock on no real object:
 * no role can take or hold it by SQL.
 */
#define SF_GUARD_LOCK_SUBID 0x534e

static void
sf_guard_install_lock(LOCKMODE mode)
{
	if (!RecoveryInProgress())
		LockDatabaseObject(ExtensionRelationId, InvalidOid, SF_GUARD_LOCK_SUBID, mode);
}

/*
 * The install's or update's side: without queueing (round 24 of the outside
 * attack: queued, it waited behind any role's open transaction that had made
 * a temporary table, or a prepared one, and every DDL statement in the
 * database queued behind it), polled until lock_timeout, or 10 s when that is
 * not set, then refused.
 */
static void
sf_guard_install_lock_exclusive(void)
{
	TimestampTz start = GetCurrentTimestamp();
	int			limit_ms = LockTimeout > 0 ? LockTimeout : 10000;

	if (RecoveryInProgress())
		return;
	while (!ConditionalLockDatabaseObject(ExtensionRelationId, InvalidOid, SF_GUARD_LOCK_SUBID, AccessExclusiveLock))
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), limit_ms))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("extension snowflake cannot be installed or updated while transactions that ran DDL in this database are open"),
					 errdetail("It waited %d ms for them to end, so that nothing is made in its schema behind its check, without holding up other DDL.", limit_ms),
					 errhint("Find them with SELECT l.pid, l.virtualtransaction FROM pg_catalog.pg_locks l WHERE l.locktype OPERATOR(pg_catalog.=) 'object' AND l.database OPERATOR(pg_catalog.=) %u AND l.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass AND l.objsubid OPERATOR(pg_catalog.=) %d, end them (a prepared transaction: COMMIT or ROLLBACK PREPARED), and run it again.",
							 MyDatabaseId, SF_GUARD_LOCK_SUBID)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Whether tree installs or updates extension snowflake. */
static bool
sf_guard_installs(Node *tree)
{
	if (IsA(tree, CreateExtensionStmt))
		return strcmp(((CreateExtensionStmt *) tree)->extname, "snowflake") == 0;
	if (IsA(tree, AlterExtensionStmt))
		return strcmp(((AlterExtensionStmt *) tree)->extname, "snowflake") == 0;
	return false;
}

static void
sf_guard_lock_and_check(const char *schema, const char *what)
{
	Oid			nsp = get_namespace_oid(schema, true);

	if (!OidIsValid(nsp))
		return;
	LockDatabaseObject(NamespaceRelationId, nsp, 0, AccessExclusiveLock);
	if (sf_extension_schema() == nsp)
		sf_guard_refuse(what, schema);
}

static void
sf_guard_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				 ProcessUtilityContext context, ParamListInfo params,
				 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *tree = pstmt->utilityStmt;
	bool		installs = sf_guard_installs(tree);

	if (installs)
		sf_guard_install_lock_exclusive();
	else if (command_tag_event_trigger_ok(CreateCommandTag(tree)) || sf_guard_explain_creates(tree))
		sf_guard_install_lock(AccessShareLock);

	if (IsA(tree, RenameStmt) && ((RenameStmt *) tree)->renameType == OBJECT_SCHEMA &&
		((RenameStmt *) tree)->subname != NULL)
		sf_guard_lock_and_check(((RenameStmt *) tree)->subname, "rename schema");
	else if (IsA(tree, DropStmt) && ((DropStmt *) tree)->removeType == OBJECT_SCHEMA)
	{
		ListCell   *lc;

		foreach(lc, ((DropStmt *) tree)->objects)
			if (IsA(lfirst(lc), String))
				sf_guard_lock_and_check(strVal(lfirst(lc)), "drop schema");
	}

	/*
	 * And whatever a drop named (round 20, F1: DROP SCHEMA of the schema an
	 * extension was in, or DROP OWNED BY that extension's owner, cascaded to
	 * the extension, to public, a member of it, and to snowflake, whose event
	 * triggers went with it): afterwards, the extension's schema must still
	 * be there.  The error undoes the drop.
	 */
	if (IsA(tree, DropStmt) || IsA(tree, DropOwnedStmt))
	{
		Oid			nsp = sf_extension_schema();
		char	   *name = OidIsValid(nsp) ? get_namespace_name(nsp) : NULL;

		if (sf_prev_utility)
			sf_prev_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		if (name != NULL && !SearchSysCacheExists1(NAMESPACEOID, ObjectIdGetDatum(nsp)))
			sf_guard_refuse("drop schema", name);
		return;
	}

	if (sf_prev_utility)
		sf_prev_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	/* What the event trigger would have checked, had the command raised one. */
	if (sf_guard_explain_creates(tree))
		sf_guard_lookalike_refuse(false);
	/* And after the install's or update's script: none at all, whoever made it. */
	if (installs)
		sf_guard_lookalike_refuse(true);
}

void
sf_guard_init(void)
{
	sf_prev_utility = ProcessUtility_hook;
	ProcessUtility_hook = sf_guard_utility;
}

/* What sf_guard_before() saw. */
typedef struct SfGuardBefore
{
	Oid			nsp;			/* the extension's schema; InvalidOid: not installed */
	char	   *name;			/* its name */
	List	   *touched;		/* functions and operators in it this transaction made or changed */
} SfGuardBefore;

/* The functions and operators in nsp that this transaction made or changed. */
static List *
sf_guard_touched_all(Oid nsp)
{
	List	   *oids = NIL;
	ListCell   *lc;

	foreach(lc, sf_guard_objects(nsp))
	{
		SfGuardObject *o = lfirst(lc);

		if (o->written_here)
			oids = lappend_oid(oids, o->oid);
	}
	return oids;
}

/*
 * Before code of another role runs inside the caller's call: the extension's
 * schema, its name, and what in it this transaction already wrote.
 */
void *
sf_guard_before(void)
{
	SfGuardBefore *b = palloc0(sizeof(SfGuardBefore));

	b->nsp = sf_extension_schema();
	b->name = OidIsValid(b->nsp) ? get_namespace_name(b->nsp) : NULL;
	if (OidIsValid(b->nsp))
		b->touched = sf_guard_touched_all(b->nsp);
	return b;
}

/*
 * After it ran: refuse unless the extension is still in the same schema under
 * the same name, and no function or operator in that schema was made or
 * changed meanwhile (a look-alike, or an overload that a later call by the
 * schema's name would pick, run with the caller's rights).  Read from the
 * catalogs as they are now: a STABLE check in SQL would see the snapshot of
 * the caller's statement, from before the owner's code ran.
 */
void
sf_guard_after(void *before, const char *caller)
{
	SfGuardBefore *b = (SfGuardBefore *) before;
	Oid			nsp_now = sf_extension_schema();
	char	   *name_now = OidIsValid(nsp_now) ? get_namespace_name(nsp_now) : NULL;
	List	   *touched;
	ListCell   *lc;

	if (nsp_now != b->nsp || name_now == NULL || b->name == NULL || strcmp(name_now, b->name) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s refused: code of the table's owner moved extension snowflake out of schema \"%s\"",
						caller, b->name ? b->name : "?"),
				 name_now ?
				 errdetail("The schema is named \"%s\" now: the rest of the call would run whatever another role put in a schema of the old name.", name_now) :
				 errdetail("The extension or its schema was dropped: the rest of the call would run whatever took the place of its functions."),
				 errhint("Find out why the owner's code (a CHECK, an index expression, a trigger) does this before migrating again.")));

	touched = sf_guard_touched_all(nsp_now);
	foreach(lc, touched)
	{
		if (!list_member_oid(b->touched, lfirst_oid(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s refused: code of the table's owner made or changed a function or operator in schema \"%s\", which extension snowflake uses",
							caller, b->name),
					 errdetail("A later call by the schema's name could pick it (a look-alike or an overload) and run it with the caller's rights."),
					 errhint("Find out why the owner's code (a CHECK, an index expression, a trigger) does this before migrating again.")));
	}
}
