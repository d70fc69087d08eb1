/*
 * shmem.c: the shared memory that holds every node's generator and the
 * durable mark.
 *
 * It only sizes, creates and attaches the space (the hooks in snowflake.c
 * call it); what the space starts with is mark.c's business.  Locking rules
 * are in snowflake.h.  This file calls nothing else of the extension.
 */
#include "postgres.h"

#include "access/twophase.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"

#include "snowflake.h"

#define SF_TRANCHE "snowflake"

SnowflakeShared *sf_shared = NULL;

/* Every PGPROC the server has (PostgreSQL's own count; MaxBackends is known by shmem_request_hook). */
static int
sf_proc_count(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

/* The space to request (shmem_request_hook), with room to align to a cache line. */
Size
sf_shmem_size(void)
{
	return MAXALIGN(add_size(offsetof(SnowflakeShared, older_pid),
							 mul_size(sf_proc_count(), sizeof(pg_atomic_uint32)))) + PG_CACHE_LINE_SIZE;
}

/* The named LWLock tranche to request beside it. */
const char *
sf_shmem_tranche(void)
{
	return SF_TRANCHE;
}

/*
 * Create or attach (caller holds AddinShmemInitLock).  Returns true when it
 * was created now: its slots and counters are zeroed, the lock is set, the
 * rest is for the caller to fill in.
 */
bool
sf_shmem_init(void)
{
	bool		found;
	void	   *raw;

	raw = ShmemInitStruct("snowflake", sf_shmem_size(), &found);
	sf_shared = (SnowflakeShared *) TYPEALIGN(PG_CACHE_LINE_SIZE, raw);
	if (found)
		return false;

	memset(sf_shared, 0, sizeof(SnowflakeShared));
	sf_shared->lock = &(GetNamedLWLockTranche(SF_TRANCHE))->lock;
	ConditionVariableInit(&sf_shared->mark_cv);
	SpinLockInit(&sf_shared->upstream_mutex);
	pg_atomic_init_u64(&sf_shared->reserved, 0);
	pg_atomic_init_u64(&sf_shared->demand, 0);
	pg_atomic_init_u64(&sf_shared->write_started, 0);
	pg_atomic_init_u64(&sf_shared->unconfirmed, 0);
	pg_atomic_init_u64(&sf_shared->confirm_started, 0);
	pg_atomic_init_u64(&sf_shared->published_lsn, InvalidXLogRecPtr);
	pg_atomic_init_u64(&sf_shared->sync_checked, 0);
	pg_atomic_init_u64(&sf_shared->write_slow_ns, 0);
	pg_atomic_init_u64(&sf_shared->writes, 0);
	pg_atomic_init_u64(&sf_shared->write_failures, 0);
	pg_atomic_init_u64(&sf_shared->caller_writes, 0);
	pg_atomic_init_u32(&sf_shared->adopt_wanted, 0);
	pg_atomic_init_u32(&sf_shared->fail_errno, 0);
	pg_atomic_init_u32(&sf_shared->fail_step, 0);
	pg_atomic_init_u64(&sf_shared->fail_until_ns, 0);
	pg_atomic_init_u64(&sf_shared->clock_ok_until, (uint64) PG_INT64_MIN);
	pg_atomic_init_u32(&sf_shared->clock_armed, 0);
	pg_atomic_init_u32(&sf_shared->clock_unsynced, 0);
	pg_atomic_init_u32(&sf_shared->clock_sync_unrecorded, 0);
	pg_atomic_init_u32(&sf_shared->clock_held_tol, 0);
	pg_atomic_init_u64(&sf_shared->clock_base, 0);
	pg_atomic_init_u64(&sf_shared->clock_held, 0);
	pg_atomic_init_u64(&sf_shared->clock_max_jump, 0);
	pg_atomic_init_u32(&sf_shared->clock_held_recorded, 0);
	pg_atomic_init_u32(&sf_shared->adoptions, 0);
	pg_atomic_init_u32(&sf_shared->nodes_dirty, 0);
	pg_atomic_init_u64(&sf_shared->nodes_write_failures, 0);
	pg_atomic_init_u64(&sf_shared->nodes_fail_until_ns, 0);
	pg_atomic_init_u32(&sf_shared->nodes_fail_errno, 0);
	pg_atomic_init_u32(&sf_shared->nodes_fail_step, 0);
	pg_atomic_init_u32(&sf_shared->adopt_by_hand, 0);
	sf_shared->older_count = sf_proc_count();
	for (int i = 0; i < sf_shared->older_count; i++)
		pg_atomic_init_u32(&sf_shared->older_pid[i], 0);
	for (int i = 0; i < SF_NODE_COUNT; i++)
	{
		SnowflakeSlot *slot = &sf_shared->slots[i].slot;

		pg_atomic_init_u64(&slot->word, 0);
		pg_atomic_init_u64(&slot->clock_last, 0);
		pg_atomic_init_u64(&slot->clock_high, 0);
		pg_atomic_init_u64(&slot->rollbacks, 0);
		pg_atomic_init_u64(&slot->max_rollback, 0);
		pg_atomic_init_u64(&slot->waits, 0);
		pg_atomic_init_u64(&slot->refusals, 0);
		pg_atomic_init_u64(&slot->claim_until, 0);
		pg_atomic_init_u64(&slot->claim_bound, 0);
		pg_atomic_init_u32(&slot->used, 0);
		pg_atomic_init_u32(&slot->record_wanted, 0);
		pg_atomic_init_u32(&slot->retired, SF_RETIRED_NO);
		pg_atomic_init_u32(&slot->rolling_back, 0);
		pg_atomic_init_u32(&slot->refusal_streak, 0);
	}
	return true;
}

/* Raise 55000 unless the library was preloaded. */
void
sf_require_shared(const char *caller)
{
	if (sf_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake must be loaded via shared_preload_libraries to use %s", caller),
				 errhint("Add snowflake to shared_preload_libraries in postgresql.conf and restart the server.")));
}
