/*
 * compat.h: differences between PostgreSQL major versions, kept out of the
 * code.  Only 15 is built and tested here; shmem_request_hook needs 15.
 */
#ifndef SNOWFLAKE_COMPAT_H
#define SNOWFLAKE_COMPAT_H

#if PG_VERSION_NUM < 150000
#error "snowflake needs PostgreSQL 15 or later (shmem_request_hook)"
#endif

/* instr_time in ns: PostgreSQL 16 has it; in 15 instr_time is a timespec. */
#ifndef INSTR_TIME_GET_NANOSEC
#define INSTR_TIME_GET_NANOSEC(t) \
	((int64) (t).tv_sec * INT64CONST(1000000000) + (int64) (t).tv_nsec)
#endif

#endif							/* SNOWFLAKE_COMPAT_H */
