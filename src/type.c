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
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/fmgrprotos.h"

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
