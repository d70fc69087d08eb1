/*
 * worker.c: the reservation writer, a background worker that keeps the
 * durable mark ahead of generation, so that the WAL flush, the write and the
 * fsyncs it costs are never paid by a caller.
 *
 * Callers wake it when their IDs come near the mark, or when they wait for it;
 * it also looks on its own (mark.c decides when and how far to raise).  It
 * needs no database connection and holds the state lock only while writing
 * the file.  It must never issue IDs, and it never overwrites a state file
 * found damaged.  While it is not running (a restart), callers wait for it,
 * within snowflake.max_wait_ms; if none runs at all, they raise the mark
 * themselves.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/syncrep.h"
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

void
snowflake_worker_main(Datum main_arg)
{
	bool		woken;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	if (sf_shared == NULL)
		proc_exit(0);
	on_shmem_exit(sf_worker_detach, (Datum) 0);
	sf_shared->worker_latch = MyLatch;
	sf_mark_publish_node();

	woken = true;
	while (!ShutdownRequestPending)
	{
		long		sleep_ms;
		int			rc = WL_LATCH_SET;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			sf_mark_publish_node();
		}
		/* Every look, not only after a reload: one started after the change must see it. */
		sf_mark_sync_check();

		sleep_ms = sf_mark_writer_step(woken);
		/*
		 * With synchronous standbys, look now and then: the set of them may
		 * change without a reload.  Sessions look too when nobody has for
		 * SF_SYNC_STALE_MS (that is the bound); this look holds generation
		 * ahead of them, and costs an idle server little.
		 */
		if (SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0' && sleep_ms > SF_SYNC_LOOK_MS)
			sleep_ms = SF_SYNC_LOOK_MS;
		if (sleep_ms > 0)
			rc = WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 sleep_ms,
							 PG_WAIT_EXTENSION);
		/* Woken by a caller (or a reload), not by the timeout: see sf_mark_writer_step. */
		woken = (rc & WL_LATCH_SET) != 0;
		ResetLatch(MyLatch);
	}
	/* Exit code 1: if this was not a server shutdown, the postmaster restarts us. */
	proc_exit(1);
}
