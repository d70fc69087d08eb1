/*
 * shmem.c: the shared memory that holds every node's generator.
 *
 * The request hook asks for the space and a named LWLock tranche; the startup
 * hook initialises it once (at server start and again after every crash
 * re-initialisation), loading the durable mark so that the generators start
 * above it.  Locking rules are in snowflake.h.  This file must never hand out
 * IDs or write the state file except at clean shutdown.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "snowflake.h"

#define SF_TRANCHE "snowflake"

SnowflakeShared *sf_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void sf_shmem_request(void);
static void sf_shmem_startup(void);
static void sf_shmem_shutdown(int code, Datum arg);

void
sf_shmem_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sf_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sf_shmem_startup;
}

/* Ask for our space and lock. */
static void
sf_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(MAXALIGN(sizeof(SnowflakeShared)) + PG_CACHE_LINE_SIZE);
	RequestNamedLWLockTranche(SF_TRANCHE, 1);
}

/* Create or attach; on creation, start every slot above the durable mark. */
static void
sf_shmem_startup(void)
{
	bool		found;
	void	   *raw;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	raw = ShmemInitStruct("snowflake", MAXALIGN(sizeof(SnowflakeShared)) + PG_CACHE_LINE_SIZE,
						  &found);
	sf_shared = (SnowflakeShared *) TYPEALIGN(PG_CACHE_LINE_SIZE, raw);

	if (!found)
	{
		uint64		start_word;

		memset(sf_shared, 0, sizeof(SnowflakeShared));
		sf_shared->lock = &(GetNamedLWLockTranche(SF_TRANCHE))->lock;
		pg_atomic_init_u64(&sf_shared->reserved, 0);

		/* Sets status, message, floor and clock_seen. */
		sf_state_load(sf_shared);
		pg_atomic_write_u64(&sf_shared->reserved, sf_shared->floor);

		/* The next ID of every node lies in the first ms after the mark. */
		start_word = SF_WORD(sf_shared->floor, SF_MAX_SEQUENCE);
		for (int i = 0; i < SF_NODE_COUNT; i++)
		{
			SnowflakeSlot *slot = &sf_shared->slots[i].slot;

			pg_atomic_init_u64(&slot->word, start_word);
			pg_atomic_init_u64(&slot->clock_last, sf_shared->clock_seen);
			pg_atomic_init_u64(&slot->clock_high, sf_shared->clock_seen);
			pg_atomic_init_u64(&slot->rollbacks, 0);
			pg_atomic_init_u64(&slot->max_rollback, 0);
			pg_atomic_init_u64(&slot->waits, 0);
			pg_atomic_init_u64(&slot->refusals, 0);
			pg_atomic_init_u64(&slot->claim_until, 0);
			pg_atomic_init_u32(&slot->used, 0);
		}
	}

	LWLockRelease(AddinShmemInitLock);

	/* Only the postmaster records the exact last value at clean shutdown. */
	if (!IsUnderPostmaster)
		on_shmem_exit(sf_shmem_shutdown, (Datum) 0);
}

/* Clean shutdown: every child has exited, so the slots hold the last IDs. */
static void
sf_shmem_shutdown(int code, Datum arg)
{
	/* A crash (code != 0) keeps the reservation mark as it is on disk. */
	if (code != 0 || sf_shared == NULL)
		return;
	sf_state_shutdown(sf_shared);
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
