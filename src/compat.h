/*
 * compat.h: every difference between the PostgreSQL major versions snowflake
 * supports (15, 16, 17, 18, 19), in one place.  No other file may test
 * PG_VERSION_NUM or a feature macro; the code calls the names defined here.
 *
 * Tested: 15, 17, 18, 19 (19~rc1-1 from Debian experimental).  Compiled only
 * in principle: 16 (no server here), so
 * every 16 difference is guarded on PG_VERSION_NUM from the release notes and
 * headers of that release.
 */
#ifndef SNOWFLAKE_COMPAT_H
#define SNOWFLAKE_COMPAT_H

#if PG_VERSION_NUM < 150000
#error "snowflake needs PostgreSQL 15 or later (shmem_request_hook)"
#endif

/*
 * The module's magic block.  PostgreSQL 18 records the module's name and
 * version (pg_get_loaded_modules()); the version comes from the control file
 * through the Makefile.
 */
#ifndef SNOWFLAKE_VERSION
#error "SNOWFLAKE_VERSION must be defined (the Makefile passes default_version)"
#endif
#ifdef PG_MODULE_MAGIC_EXT
#define SNOWFLAKE_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = "snowflake", .version = SNOWFLAKE_VERSION)
#else
#define SNOWFLAKE_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/*
 * instr_time in ns: PostgreSQL 16 has INSTR_TIME_GET_NANOSEC (instr_time
 * became an int64 of ticks there); in 15 instr_time is a struct timespec.
 */
#if PG_VERSION_NUM < 160000
#define INSTR_TIME_GET_NANOSEC(t) \
	((int64) (t).tv_sec * INT64CONST(1000000000) + (int64) (t).tv_nsec)
#endif

/*
 * A function that never returns: PostgreSQL 18 replaced the suffix
 * pg_attribute_noreturn() with the prefix pg_noreturn (C11 _Noreturn).  Write
 * "pg_noreturn extern void f(void);" on every version.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * PostgreSQL 19's funcapi.h no longer includes utils/tuplestore.h, which
 * declares tuplestore_putvalues() (the set-returning functions use it).  The
 * header exists in every supported version; 19 needs it named.
 */
#if PG_VERSION_NUM >= 190000
#include "utils/tuplestore.h"
#endif

/*
 * The planner hook that sees a base relation once get_relation_info() has read
 * its indexes (the type offers its merge-join copies there):
 * get_relation_info_hook up to 18; 19 replaced it with build_simple_rel_hook
 * (optimizer/pathnode.h), called on the same finished RelOptInfo.  Declare the
 * hook function as "void f(SF_REL_HOOK_PARAMS)" and chain with
 * "prev(SF_REL_HOOK_ARGS)"; rel is the RelOptInfo in both.
 */
#if PG_VERSION_NUM >= 190000
#include "optimizer/pathnode.h"
typedef build_simple_rel_hook_type sf_rel_hook_type;
#define sf_rel_hook build_simple_rel_hook
#define SF_REL_HOOK_PARAMS PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte
#define SF_REL_HOOK_ARGS root, rel, rte
#else
#include "optimizer/plancat.h"
typedef get_relation_info_hook_type sf_rel_hook_type;
#define sf_rel_hook get_relation_info_hook
#define SF_REL_HOOK_PARAMS PlannerInfo *root, Oid relationObjectId, bool inhparent, RelOptInfo *rel
#define SF_REL_HOOK_ARGS root, relationObjectId, inhparent, rel
#endif

/*
 * get_database_name(): declared in commands/dbcommands.h up to 18, in
 * utils/lsyscache.h from 19 on.
 */
#if PG_VERSION_NUM >= 190000
#include "utils/lsyscache.h"
#else
#include "commands/dbcommands.h"
#endif

/*
 * Where this session's value of a setting came from (its GucSource): 16 and
 * later export find_option() (guc_tables.h); 15 has only the array of every
 * setting.  Used for snowflake's own settings, which always exist.
 */
#include "utils/guc_tables.h"
static inline GucSource
sf_guc_source(const char *name)
{
#if PG_VERSION_NUM >= 160000
	struct config_generic *g = find_option(name, false, true, ERROR);

	return g != NULL ? g->source : PGC_S_DEFAULT;
#else
	struct config_generic **vars = get_guc_variables();
	int			n = GetNumConfigOptions();

	for (int i = 0; i < n; i++)
		if (strcmp(vars[i]->name, name) == 0)
			return vars[i]->source;
	return PGC_S_DEFAULT;
#endif
}

#endif							/* SNOWFLAKE_COMPAT_H */
