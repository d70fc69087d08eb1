/*
 * type.c: the functions behind the snowflake type, each PostgreSQL's own int8
 * function under another name.
 *
 * A snowflake is an int8 in every bit, so each function here passes its call
 * on, fcinfo and all, to the int8 function it names: snowflake_<f> calls <f>.
 * They are C functions rather than LANGUAGE internal aliases of <f> because
 * fmgr looks an alias up by name, with a linear search of every built-in
 * function, each time it builds an FmgrInfo: once per row in json_agg(),
 * to_json() and row_to_json(), and once per rescan in a nested loop that
 * compares a snowflake key with a bigint.  A C function is found through a
 * hash table.
 *
 * Must never do anything of its own: no checks, no other behaviour than int8's.
 *
 * Four additions for the planner and the DBA: a hint for an update stopped by
 * an object named snowflake (sf_type_emit_log), a support function that turns
 * a snowflake constant in a range bound into a bigint one (snowflake_support,
 * at the end), snowflake indexes offered in integer_ops order for merge joins
 * with bigint indexes (sf_type_relation_info), and range estimates
 * (sf_type_init).  The planner
 * interpolates inside a histogram bucket only for values of built-in types
 * (convert_to_scalar() in selfuncs.c knows int8, not snowflake), so a range
 * over a snowflake column was estimated in whole buckets: one hour of a large
 * table came out as one row.  A snowflake is an int8 in every bit, so when the
 * planner looks up a snowflake column's statistics, get_relation_stats_hook
 * tells it that the column's values are int8: the histogram, most common
 * values and the operators stay the column's own, only the interpolation
 * learns how to read the values.  The operators keep scalarltsel and friends
 * as estimators, which clauselist_selectivity() needs to pair a < and a > on
 * one column into one range.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/transam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/plancat.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "snowflake.h"

#define SNOWFLAKE_AS_INT8(f) \
	PG_FUNCTION_INFO_V1(snowflake_##f); \
	Datum snowflake_##f(PG_FUNCTION_ARGS); \
	Datum \
	snowflake_##f(PG_FUNCTION_ARGS) \
	{ \
		return f(fcinfo); \
	}

/* Text and binary I/O. */
SNOWFLAKE_AS_INT8(int8in)
SNOWFLAKE_AS_INT8(int8out)
SNOWFLAKE_AS_INT8(int8recv)
SNOWFLAKE_AS_INT8(int8send)

/* Casts: integer, smallint and numeric to snowflake, snowflake to numeric. */
SNOWFLAKE_AS_INT8(int48)
SNOWFLAKE_AS_INT8(int28)
SNOWFLAKE_AS_INT8(numeric_int8)
SNOWFLAKE_AS_INT8(int8_numeric)

/* Comparisons: snowflake (an int8) against int8, int4 and int2, in both orders. */
SNOWFLAKE_AS_INT8(int28eq)
SNOWFLAKE_AS_INT8(int28ge)
SNOWFLAKE_AS_INT8(int28gt)
SNOWFLAKE_AS_INT8(int28le)
SNOWFLAKE_AS_INT8(int28lt)
SNOWFLAKE_AS_INT8(int28ne)
SNOWFLAKE_AS_INT8(int48eq)
SNOWFLAKE_AS_INT8(int48ge)
SNOWFLAKE_AS_INT8(int48gt)
SNOWFLAKE_AS_INT8(int48le)
SNOWFLAKE_AS_INT8(int48lt)
SNOWFLAKE_AS_INT8(int48ne)
SNOWFLAKE_AS_INT8(int82eq)
SNOWFLAKE_AS_INT8(int82ge)
SNOWFLAKE_AS_INT8(int82gt)
SNOWFLAKE_AS_INT8(int82le)
SNOWFLAKE_AS_INT8(int82lt)
SNOWFLAKE_AS_INT8(int82ne)
SNOWFLAKE_AS_INT8(int84eq)
SNOWFLAKE_AS_INT8(int84ge)
SNOWFLAKE_AS_INT8(int84gt)
SNOWFLAKE_AS_INT8(int84le)
SNOWFLAKE_AS_INT8(int84lt)
SNOWFLAKE_AS_INT8(int84ne)
SNOWFLAKE_AS_INT8(int8eq)
SNOWFLAKE_AS_INT8(int8ge)
SNOWFLAKE_AS_INT8(int8gt)
SNOWFLAKE_AS_INT8(int8le)
SNOWFLAKE_AS_INT8(int8lt)
SNOWFLAKE_AS_INT8(int8ne)

/* Operator class support: btree comparison and sort support, hashing. */
SNOWFLAKE_AS_INT8(btint28cmp)
SNOWFLAKE_AS_INT8(btint48cmp)
SNOWFLAKE_AS_INT8(btint82cmp)
SNOWFLAKE_AS_INT8(btint84cmp)
SNOWFLAKE_AS_INT8(btint8cmp)
SNOWFLAKE_AS_INT8(btint8sortsupport)
SNOWFLAKE_AS_INT8(hashint8)
SNOWFLAKE_AS_INT8(hashint8extended)

/* min() and max(). */
SNOWFLAKE_AS_INT8(int8larger)
SNOWFLAKE_AS_INT8(int8smaller)

/*
 * Is typid the snowflake type (of any database, in any schema)?  It is if its
 * input function is snowflake_int8in of a library named snowflake.  The last
 * answer is kept; a change to any type forgets it.
 */
static Oid	sf_type_checked = InvalidOid;
static bool sf_type_is_snowflake = false;

static void
sf_type_forget(Datum arg, int cacheid, uint32 hashvalue)
{
	sf_type_checked = InvalidOid;
}

static bool
sf_type_is(Oid typid)
{
	HeapTuple	tup;

	if (typid < FirstNormalObjectId)
		return false;
	if (typid == sf_type_checked)
		return sf_type_is_snowflake;

	sf_type_is_snowflake = false;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_type typ = (Form_pg_type) GETSTRUCT(tup);

		/*
		 * Read the input function's catalog row, not fmgr_info(): that would
		 * load the library of any other extension's type.
		 */
		if (typ->typisdefined && typ->typlen == 8 && typ->typbyval &&
			OidIsValid(typ->typinput))
		{
			HeapTuple	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(typ->typinput));

			if (HeapTupleIsValid(proc))
			{
				bool		srcnull;
				bool		binnull;
				Datum		src = SysCacheGetAttr(PROCOID, proc, Anum_pg_proc_prosrc, &srcnull);
				Datum		bin = SysCacheGetAttr(PROCOID, proc, Anum_pg_proc_probin, &binnull);

				if (!srcnull && !binnull)
				{
					char	   *srcs = TextDatumGetCString(src);
					char	   *bins = TextDatumGetCString(bin);
					size_t		n = strlen(bins);

					sf_type_is_snowflake = strcmp(srcs, "snowflake_int8in") == 0 &&
						n >= 9 && strcmp(bins + n - 9, "snowflake") == 0;
					pfree(srcs);
					pfree(bins);
				}
				ReleaseSysCache(proc);
			}
		}
		ReleaseSysCache(tup);
	}
	sf_type_checked = typid;
	return sf_type_is_snowflake;
}

static get_relation_stats_hook_type prev_get_relation_stats_hook = NULL;

/*
 * The statistics of a snowflake column are read as int8's: only vartype
 * changes, which selfuncs.c uses to convert histogram bounds and constants to
 * numbers (convert_to_scalar).  The statistics tuple itself is found as
 * usual (or by the next hook).
 */
static bool
sf_type_relation_stats(PlannerInfo *root, RangeTblEntry *rte,
					   AttrNumber attnum, VariableStatData *vardata)
{
	if (sf_type_is(vardata->vartype))
		vardata->vartype = INT8OID;
	if (prev_get_relation_stats_hook)
		return prev_get_relation_stats_hook(root, rte, attnum, vardata);
	return false;
}

static sf_rel_hook_type prev_rel_hook = NULL;

/*
 * A merge join needs both inputs in the order of one operator family.  An
 * index on a snowflake column (snowflake_ops) gives its rows in the order of
 * snowflake_ops, an index on a bigint column in that of integer_ops: the
 * same order (both are int8's comparison), but the planner compares pathkeys
 * by family, so a merge join of the two sorted one side even with both
 * indexes.  The type's own < cannot join integer_ops (ORDER BY id would then
 * ask for integer_ops order, which no existing snowflake index gives).  So
 * each btree index with a snowflake key column is offered to the planner a
 * second time, reporting integer_ops as that column's order
 * (sortopfamily): that copy serves merge joins with integer_ops columns, the
 * original ORDER BY id and max(id).  The copy only orders: no bitmap scans of
 * it (the original has them).  It is offered only while integer_ops holds the
 * type's ordering members (not after a pg_upgrade that lost them, until
 * snowflake_repair_integer_ops()).
 */
static void
sf_type_relation_info(SF_REL_HOOK_PARAMS)
{
	List	   *copies = NIL;
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = (IndexOptInfo *) lfirst(lc);
		IndexOptInfo *copy = NULL;

		if (index->relam != BTREE_AM_OID || index->sortopfamily == NULL)
			continue;
		for (int i = 0; i < index->nkeycolumns; i++)
		{
			Oid			typ = index->opcintype[i];

			if (index->sortopfamily[i] == INTEGER_BTREE_FAM_OID || !sf_type_is(typ) ||
				!OidIsValid(get_opfamily_member(INTEGER_BTREE_FAM_OID, typ, typ, BTLessStrategyNumber)) ||
				!OidIsValid(get_opfamily_member(INTEGER_BTREE_FAM_OID, typ, typ, BTEqualStrategyNumber)))
				continue;
			if (copy == NULL)
			{
				copy = makeNode(IndexOptInfo);
				memcpy(copy, index, sizeof(IndexOptInfo));
				copy->sortopfamily = palloc(sizeof(Oid) * index->nkeycolumns);
				memcpy(copy->sortopfamily, index->sortopfamily, sizeof(Oid) * index->nkeycolumns);
				copy->amhasgetbitmap = false;
			}
			copy->sortopfamily[i] = INTEGER_BTREE_FAM_OID;
		}
		if (copy != NULL)
			copies = lappend(copies, copy);
	}
	rel->indexlist = list_concat(rel->indexlist, copies);

	if (prev_rel_hook)
		prev_rel_hook(SF_REL_HOOK_ARGS);
}

static emit_log_hook_type prev_emit_log_hook = NULL;

/*
 * The update to 1.2 (and a fresh install) creates the type snowflake and the
 * functions snowflake(integer) ... in the extension's schema.  An object of
 * the user's of that name there (a table named snowflake has a row type named
 * snowflake) stops it with PostgreSQL's bare "type "snowflake" already
 * exists".  The release scripts cannot change, so the hint is added here, to
 * that error of a CREATE or ALTER EXTENSION snowflake command only.
 */
/* Does s contain word, in any case? */
static bool
sf_type_mentions(const char *s, const char *word)
{
	size_t		n = strlen(word);

	for (; *s != '\0'; s++)
		if (pg_strncasecmp(s, word, n) == 0)
			return true;
	return false;
}

static void
sf_type_emit_log(ErrorData *edata)
{
	if (edata->elevel == ERROR && edata->sqlerrcode == ERRCODE_DUPLICATE_OBJECT &&
		edata->hint == NULL && edata->message != NULL &&
		strstr(edata->message, "\"snowflake\"") != NULL &&
		debug_query_string != NULL &&
		sf_type_mentions(debug_query_string, "extension") &&
		sf_type_mentions(debug_query_string, "snowflake"))
	{
		MemoryContext old = MemoryContextSwitchTo(ErrorContext);

		edata->hint = pstrdup("Version 1.2 of the extension creates the type snowflake, and functions named "
							  "snowflake, in the extension's schema, where an object of that name already is "
							  "(a table named snowflake has a row type of that name). Move that object to "
							  "another schema or rename it (ALTER TABLE snowflake SET SCHEMA app), then run "
							  "the command again.");
		MemoryContextSwitchTo(old);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

void
sf_type_init(void)
{
	prev_get_relation_stats_hook = get_relation_stats_hook;
	get_relation_stats_hook = sf_type_relation_stats;
	prev_rel_hook = sf_rel_hook;
	sf_rel_hook = sf_type_relation_info;
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = sf_type_emit_log;
	CacheRegisterSyscacheCallback(TYPEOID, sf_type_forget, (Datum) 0);
}

/*
 * snowflake_support: the planner support function of the type's own <, <=,
 * >= and > (snowflake against snowflake).  The histogram interpolation reads
 * the constant's type too, and a snowflake constant (a quoted literal,
 * '...'::snowflake, a parameter sent untyped) is not one it knows.  So
 * id < '1724551110457221119' is simplified to id < 1724551110457221119::bigint,
 * the same comparison through the type's (snowflake, bigint) operator (its
 * own snowflake_ops member, with the same estimator): same bits, same answer,
 * and an estimate that interpolates.
 */
PG_FUNCTION_INFO_V1(snowflake_support);
Datum		snowflake_support(PG_FUNCTION_ARGS);

Datum
snowflake_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestSimplify *req;
	FuncExpr   *fexpr;
	Node	   *left;
	Node	   *right;
	Oid			sftype;
	Oid			opclass;
	Oid			opfamily;
	Oid			opno;
	int16		strategy;
	HeapTuple	proctup;
	char	   *prosrc;
	bool		const_left;
	Const	   *c;
	Expr	   *result;

	if (!IsA(rawreq, SupportRequestSimplify))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestSimplify *) rawreq;
	fexpr = req->fcall;
	if (list_length(fexpr->args) != 2)
		PG_RETURN_POINTER(NULL);
	left = linitial(fexpr->args);
	right = lsecond(fexpr->args);
	sftype = exprType(left);
	if (exprType(right) != sftype || !sf_type_is(sftype))
		PG_RETURN_POINTER(NULL);
	/* exactly one side a constant (two are folded before this is asked) */
	if (IsA(right, Const) && !IsA(left, Const))
		const_left = false;
	else if (IsA(left, Const) && !IsA(right, Const))
		const_left = true;
	else
		PG_RETURN_POINTER(NULL);

	/* which comparison: the int8 function the C function passes the call to */
	proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fexpr->funcid));
	if (!HeapTupleIsValid(proctup))
		PG_RETURN_POINTER(NULL);
	{
		bool		isnull;
		Datum		d = SysCacheGetAttr(PROCOID, proctup, Anum_pg_proc_prosrc, &isnull);

		prosrc = isnull ? pstrdup("") : TextDatumGetCString(d);
	}
	ReleaseSysCache(proctup);
	if (strcmp(prosrc, "snowflake_int8lt") == 0)
		strategy = BTLessStrategyNumber;
	else if (strcmp(prosrc, "snowflake_int8le") == 0)
		strategy = BTLessEqualStrategyNumber;
	else if (strcmp(prosrc, "snowflake_int8ge") == 0)
		strategy = BTGreaterEqualStrategyNumber;
	else if (strcmp(prosrc, "snowflake_int8gt") == 0)
		strategy = BTGreaterStrategyNumber;
	else
		PG_RETURN_POINTER(NULL);

	/* the same comparison with a bigint on the constant's side, from snowflake_ops */
	opclass = GetDefaultOpClass(sftype, BTREE_AM_OID);
	if (!OidIsValid(opclass))
		PG_RETURN_POINTER(NULL);
	opfamily = get_opclass_family(opclass);
	opno = const_left ? get_opfamily_member(opfamily, INT8OID, sftype, strategy)
		: get_opfamily_member(opfamily, sftype, INT8OID, strategy);
	if (!OidIsValid(opno))
		PG_RETURN_POINTER(NULL);

	c = (Const *) copyObject(const_left ? left : right);
	c->consttype = INT8OID;
	c->consttypmod = -1;
	c->constcollid = InvalidOid;
	result = make_opclause(opno, BOOLOID, false,
						   (Expr *) (const_left ? (Node *) c : left),
						   (Expr *) (const_left ? right : (Node *) c),
						   InvalidOid, InvalidOid);
	((OpExpr *) result)->opfuncid = get_opcode(opno);
	((OpExpr *) result)->location = fexpr->location;
	PG_RETURN_POINTER(result);
}
