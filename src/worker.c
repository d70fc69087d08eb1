/*
 * worker.c: a background worker that keeps the durable mark ahead of
 * generation, so that the fsync it costs is never paid by a caller.
 *
 * Backends wake it when their IDs come within half a reservation window of the
 * mark; it also looks on its own every half window.  It needs no database
 * connection and holds the state lock only while writing the file.  It must
 * never issue IDs, and it never overwrites a state file found damaged.  If it
 * is not running (or too slow), backends raise the mark themselves: the worker
 * is an optimisation, never a condition of correctness.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "snowflake.h"

PGDLLEXPORT void snowflake_worker_main(Datum main_arg);

/* Register one of our background workers (named as ps and pg_stat_activity show it). */
void
sf_bgworker_register(const char *name, const char *function, int flags,
					 BgWorkerStartTime start, int restart_s)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = flags;
	worker.bgw_start_time = start;
	worker.bgw_restart_time = restart_s;
	strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, name, BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

void
sf_worker_register(void)
{
	sf_bgworker_register("snowflake reservation writer", "snowflake_worker_main",
						 BGWORKER_SHMEM_ACCESS, BgWorkerStart_PostmasterStart, 1);
}

static void
sf_worker_detach(int code, Datum arg)
{
	sf_shared->worker_latch = NULL;
}

/* The highest tick any node has issued since start-up, or -1. */
static int64
sf_worker_demand(void)
{
	int64		high = -1;

	for (int i = 0; i < SF_NODE_COUNT; i++)
	{
		SnowflakeSlot *slot = &sf_shared->slots[i].slot;

		if (pg_atomic_read_u32(&slot->used) != 0)
			high = Max(high, SF_WORD_TICK(pg_atomic_read_u64(&slot->word)));
	}
	return high;
}

void
snowflake_worker_main(Datum main_arg)
{
	int64		failed_at = -1;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	if (sf_shared == NULL)
		proc_exit(0);
	on_shmem_exit(sf_worker_detach, (Datum) 0);
	sf_shared->worker_latch = MyLatch;

	while (!ShutdownRequestPending)
	{
		int64		demand;
		int64		now_tick;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		demand = sf_worker_demand();
		now_tick = sf_wall_unix_ms() - SF_EPOCH_UNIX_MS;

		/* Raise when IDs come within half a window; after a failure, every 100 ms at most. */
		if (sf_shared->status == SF_STATE_OK && demand >= 0 &&
			demand + sf_reservation_ms / 2 > (int64) pg_atomic_read_u64(&sf_shared->reserved) &&
			(failed_at < 0 || now_tick - failed_at >= 100))
			failed_at = sf_mark_raise(demand, now_tick, true, LOG) ? -1 : now_tick;

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(sf_reservation_ms / 2, 10),
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	/* Exit code 1: if this was not a server shutdown, the postmaster restarts us. */
	proc_exit(1);
}
