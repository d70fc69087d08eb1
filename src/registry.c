/*
 * claimer.c: a background worker that takes and renews this server's claim on
 * its node in the fleet's registry (snowflake.registry), so that a restart or
 * a failover needs no operator to claim again.
 *
 * It runs only when snowflake.registry is set at server start.  It connects to
 * snowflake.registry_database and calls snowflake_claim_node() there every
 * third of the lease; a failure (registry unreachable, node held by another
 * server, extension missing) is logged and retried sooner, never fatal: with
 * snowflake.require_claim on, generation stops by itself when the lease ends.
 * It must never write the registry other than through snowflake_claim_node().
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "snowflake.h"

PGDLLEXPORT void snowflake_claimer_main(Datum main_arg);

void
sf_claimer_register(void)
{
	sf_bgworker_register("snowflake registry claimer", "snowflake_claimer_main",
						 BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION,
						 BgWorkerStart_RecoveryFinished, 5);
}

/* One claim or renewal, in its own transaction; false (and a warning) on failure. */
static bool
sf_claim_once(void)
{
	MemoryContext caller = CurrentMemoryContext;
	bool		ok = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "snowflake: claiming this server's node");

		if (SPI_execute("SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
						"JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
						"WHERE e.extname = 'snowflake'", true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not look up the snowflake extension");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("extension \"snowflake\" is not installed in database \"%s\"",
							sf_registry_database),
					 errhint("Run CREATE EXTENSION snowflake there, or set snowflake.registry_database.")));
		else
		{
			char	   *schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			char	   *sql = psprintf("SELECT %s.snowflake_claim_node($1::pg_catalog.regclass, "
									   "pg_catalog.make_interval(secs => $2))", schema);
			Oid			types[2] = {TEXTOID, FLOAT8OID};
			Datum		values[2];

			values[0] = CStringGetTextDatum(sf_registry);
			values[1] = Float8GetDatum(sf_registry_lease_ms / 1000.0);
			if (SPI_execute_with_args(sql, 2, types, values, NULL, false, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not run snowflake_claim_node()");
			ok = true;
		}

		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(WARNING,
				(errmsg("snowflake could not claim this server's node in registry \"%s\": %s",
						sf_registry, edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0,
				 edata->hint ? errhint("%s", edata->hint) : 0));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();

	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

void
snowflake_claimer_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(sf_registry_database, NULL, 0);

	for (;;)
	{
		long		wait_ms;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* Renew at a third of the lease; after a failure, try again sooner. */
		if (sf_claim_once())
			wait_ms = sf_registry_lease_ms / 3;
		else
			wait_ms = Min(sf_registry_lease_ms / 10, 5000);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(wait_ms, 100),
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
