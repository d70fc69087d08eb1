/*
 * functions.c: the SQL-callable functions, thin wrappers that check their
 * arguments and call the layout (encode, decode) or the generator.
 *
 * Every argument outside its range is an error naming the argument and the
 * range; nothing is masked, truncated or wrapped.  Encoding and decoding need
 * no shared memory and work without preloading.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_db_role_setting.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "snowflake.h"

PG_FUNCTION_INFO_V1(snowflake_next);
PG_FUNCTION_INFO_V1(snowflake_next_n);
PG_FUNCTION_INFO_V1(snowflake_encode_unix_ms);
PG_FUNCTION_INFO_V1(snowflake_encode_timestamptz);
PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
PG_FUNCTION_INFO_V1(snowflake_unix_ms);
PG_FUNCTION_INFO_V1(snowflake_datacenter_id);
PG_FUNCTION_INFO_V1(snowflake_machine_id);
PG_FUNCTION_INFO_V1(snowflake_sequence);
PG_FUNCTION_INFO_V1(snowflake_min_id);
PG_FUNCTION_INFO_V1(snowflake_max_id);
PG_FUNCTION_INFO_V1(snowflake_status);
PG_FUNCTION_INFO_V1(snowflake_adopt_state);
PG_FUNCTION_INFO_V1(snowflake_server_identity);
PG_FUNCTION_INFO_V1(snowflake_state);
PG_FUNCTION_INFO_V1(snowflake_accept_clock);

#define SF_DECODE_COLS	5
#define SF_STATUS_COLS	13		/* 1.0 declares the first 10 */
#define SF_STATE_COLS	11

/* Refuse an int argument outside [min, max], naming it. */
static void
sf_check_range(const char *arg, int64 value, int64 min, int64 max)
{
	if (value < min || value > max)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("%s must be between " INT64_FORMAT " and " INT64_FORMAT ", not " INT64_FORMAT,
						arg, min, max, value)));
}

/* Refuse a negative ID. */
static inline int64
sf_check_id(int64 id)
{
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("id must be between 0 and " INT64_FORMAT ", not " INT64_FORMAT, PG_INT64_MAX, id),
				 errdetail("A Snowflake ID is a positive bigint: its sign bit is always 0.")));
	return id;
}

/* Unix ms of a timestamptz argument, which must lie in the Snowflake range. */
static int64
sf_timestamptz_arg(const char *arg, TimestampTz ts)
{
	int64		unix_ms = TIMESTAMP_NOT_FINITE(ts) ? 0 : sf_timestamptz_to_unix_ms(ts);

	if (TIMESTAMP_NOT_FINITE(ts) || unix_ms < SF_EPOCH_UNIX_MS || unix_ms > SF_MAX_UNIX_MS)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("%s must be between %s and %s, not %s",
						arg, SF_MIN_TEXT, SF_MAX_TEXT, timestamptz_to_str(ts))));
	return unix_ms;
}

static int64
sf_encode(int64 unix_ms, int32 datacenter, int32 machine, int32 sequence)
{
	sf_check_range("datacenter_id", datacenter, 0, SF_MAX_DATACENTER);
	sf_check_range("machine_id", machine, 0, SF_MAX_MACHINE);
	sf_check_range("sequence", sequence, 0, SF_MAX_SEQUENCE);
	return sf_make_id(unix_ms - SF_EPOCH_UNIX_MS, datacenter, machine, sequence);
}

/* snowflake_next(): one new ID for this server's node. */
Datum
snowflake_next(PG_FUNCTION_ARGS)
{
	int			node;

	node = sf_current_node("snowflake_next()");
	PG_RETURN_INT64(sf_word_to_id(sf_reserve(node, 1, "snowflake_next()"), node));
}

/* snowflake_next_n(n): n new IDs, strictly increasing, reserved in one step. */
Datum
snowflake_next_n(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	uint64	   *words;

	if (SRF_IS_FIRSTCALL())
	{
		int32		n = PG_GETARG_INT32(0);
		int			node;

		sf_check_range("n", n, 1, SF_MAX_N);
		node = sf_current_node("snowflake_next_n()");

		funcctx = SRF_FIRSTCALL_INIT();
		/* words[0]: next word to return, words[1]: node */
		words = MemoryContextAlloc(funcctx->multi_call_memory_ctx, 2 * sizeof(uint64));
		words[0] = sf_reserve(node, n, "snowflake_next_n()");
		words[1] = (uint64) node;
		funcctx->user_fctx = words;
		funcctx->max_calls = n;
	}

	funcctx = SRF_PERCALL_SETUP();
	words = funcctx->user_fctx;
	if (funcctx->call_cntr < funcctx->max_calls)
	{
		/* Before SRF_RETURN_NEXT: it advances call_cntr before using its argument. */
		int64		id = sf_word_to_id(words[0] + funcctx->call_cntr, (int) words[1]);

		SRF_RETURN_NEXT(funcctx, Int64GetDatum(id));
	}
	SRF_RETURN_DONE(funcctx);
}

/* snowflake_encode(unix_ms bigint, datacenter_id, machine_id, sequence) */
Datum
snowflake_encode_unix_ms(PG_FUNCTION_ARGS)
{
	int64		unix_ms = PG_GETARG_INT64(0);

	sf_check_range("unix_ms", unix_ms, SF_EPOCH_UNIX_MS, SF_MAX_UNIX_MS);
	PG_RETURN_INT64(sf_encode(unix_ms, PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3)));
}

/* snowflake_encode(ts timestamptz, datacenter_id, machine_id, sequence): ts floored to the ms */
Datum
snowflake_encode_timestamptz(PG_FUNCTION_ARGS)
{
	int64		unix_ms = sf_timestamptz_arg("ts", PG_GETARG_TIMESTAMPTZ(0));

	PG_RETURN_INT64(sf_encode(unix_ms, PG_GETARG_INT32(1), PG_GETARG_INT32(2), PG_GETARG_INT32(3)));
}

/* snowflake_decode(id): (ts, unix_ms, datacenter_id, machine_id, sequence) */
Datum
snowflake_decode(PG_FUNCTION_ARGS)
{
	int64		id = sf_check_id(PG_GETARG_INT64(0));
	int64		unix_ms = sf_id_tick(id) + SF_EPOCH_UNIX_MS;
	TupleDesc	tupdesc = (TupleDesc) fcinfo->flinfo->fn_extra;
	Datum		values[SF_DECODE_COLS];
	bool		nulls[SF_DECODE_COLS] = {0};

	/* Look the row type up once per call site, not once per row. */
	if (tupdesc == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		tupdesc = BlessTupleDesc(CreateTupleDescCopy(tupdesc));
		MemoryContextSwitchTo(old);
		fcinfo->flinfo->fn_extra = tupdesc;
	}

	values[0] = TimestampTzGetDatum(sf_unix_ms_to_timestamptz(unix_ms));
	values[1] = Int64GetDatum(unix_ms);
	values[2] = Int32GetDatum(sf_id_datacenter(id));
	values[3] = Int32GetDatum(sf_id_machine(id));
	values[4] = Int32GetDatum(sf_id_sequence(id));

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
snowflake_timestamp(PG_FUNCTION_ARGS)
{
	int64		id = sf_check_id(PG_GETARG_INT64(0));

	PG_RETURN_TIMESTAMPTZ(sf_unix_ms_to_timestamptz(sf_id_tick(id) + SF_EPOCH_UNIX_MS));
}

Datum
snowflake_unix_ms(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(sf_id_tick(sf_check_id(PG_GETARG_INT64(0))) + SF_EPOCH_UNIX_MS);
}

Datum
snowflake_datacenter_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(sf_id_datacenter(sf_check_id(PG_GETARG_INT64(0))));
}

Datum
snowflake_machine_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(sf_id_machine(sf_check_id(PG_GETARG_INT64(0))));
}

Datum
snowflake_sequence(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(sf_id_sequence(sf_check_id(PG_GETARG_INT64(0))));
}

/* The smallest ID of the ms that holds ts. */
Datum
snowflake_min_id(PG_FUNCTION_ARGS)
{
	int64		tick = sf_timestamptz_arg("ts", PG_GETARG_TIMESTAMPTZ(0)) - SF_EPOCH_UNIX_MS;

	sf_migrate_refuse_old_caller(fcinfo);	/* migrate.c: the 1.1 and 1.2 migrations */

	PG_RETURN_INT64(sf_make_id(tick, 0, 0, 0));
}

/* The largest ID of the ms that holds ts. */
Datum
snowflake_max_id(PG_FUNCTION_ARGS)
{
	int64		tick = sf_timestamptz_arg("ts", PG_GETARG_TIMESTAMPTZ(0)) - SF_EPOCH_UNIX_MS;

	PG_RETURN_INT64(sf_make_id(tick, SF_MAX_DATACENTER, SF_MAX_MACHINE, SF_MAX_SEQUENCE));
}

/*
 * snowflake_status(): one row per node slot that issued or refused since
 * start-up.  1.2 adds the clock's health: how far the wall clock is from the
 * last ID's ms, the largest forward step seen and whether generation is held
 * (both server-wide).  1.0 and 1.1 declare the first ten columns: the row is
 * cut to what the catalog declares.
 */
Datum
snowflake_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz reserved_until;
	int			natts;
	int64		now_ms;

	sf_require_shared("snowflake_status()");
	InitMaterializedSRF(fcinfo, 0);
	natts = rsinfo->setDesc->natts;
	if (natts > SF_STATUS_COLS)
		elog(ERROR, "snowflake_status() is declared with %d columns, this library knows %d",
			 natts, SF_STATUS_COLS);
	now_ms = sf_wall_unix_ms();

	reserved_until = sf_unix_ms_to_timestamptz((int64) pg_atomic_read_u64(&sf_shared->reserved) +
											   SF_EPOCH_UNIX_MS);

	for (int node = 0; node < SF_NODE_COUNT; node++)
	{
		SnowflakeSlot *slot = &sf_shared->slots[node].slot;
		Datum		values[SF_STATUS_COLS];
		bool		nulls[SF_STATUS_COLS] = {0};
		uint64		word;
		int64		id;
		bool		unused;

		if (pg_atomic_read_u32(&slot->used) == 0 &&
			pg_atomic_read_u64(&slot->refusals) == 0)
			continue;

		word = pg_atomic_read_u64(&slot->word);
		id = sf_word_to_id(word, node);

		values[0] = Int32GetDatum(node / (int) (SF_MAX_MACHINE + 1));
		values[1] = Int32GetDatum(node % (int) (SF_MAX_MACHINE + 1));
		values[2] = Int64GetDatum(id);
		values[3] = TimestampTzGetDatum(sf_unix_ms_to_timestamptz(sf_id_tick(id) + SF_EPOCH_UNIX_MS));
		values[4] = Int32GetDatum(sf_id_sequence(id));
		/* A slot that only refused since start-up issued no ID: no last ID to show. */
		unused = pg_atomic_read_u32(&slot->used) == 0;
		nulls[2] = nulls[3] = nulls[4] = unused;
		values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->rollbacks));
		values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->max_rollback));
		values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->waits));
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->refusals));
		values[9] = TimestampTzGetDatum(reserved_until);
		/* 1.2: the clock's health. */
		if (natts > 10)
		{
			values[10] = Int64GetDatum(now_ms - (sf_id_tick(id) + SF_EPOCH_UNIX_MS));
			nulls[10] = unused;
			values[11] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->clock_max_jump));
			values[12] = BoolGetDatum(pg_atomic_read_u64(&sf_shared->clock_held) != 0);
		}

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	return (Datum) 0;
}

/*
 * Refuse a hand adoption while ALTER DATABASE or ALTER ROLE settings give
 * node ids (round 7, F2): they came with the copy from the original, which
 * may still run those nodes, and every session of that database or role here
 * would issue its IDs.  Read from the catalog directly (no query, nothing a
 * role could plant).
 */
static void
sf_refuse_carried_node_settings(void)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	StringInfoData found;

	initStringInfo(&found);
	rel = table_open(DbRoleSettingRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_db_role_setting setting = (Form_pg_db_role_setting) GETSTRUCT(tuple);
		bool		isnull;
		Datum		config = heap_getattr(tuple, Anum_pg_db_role_setting_setconfig,
										  RelationGetDescr(rel), &isnull);
		Datum	   *items;
		bool	   *item_nulls;
		int			count;

		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT,
						  &items, &item_nulls, &count);
		for (int i = 0; i < count; i++)
		{
			char	   *item;
			char	   *db;
			char	   *role;

			if (item_nulls[i])
				continue;
			item = TextDatumGetCString(items[i]);
			if (pg_strncasecmp(item, "snowflake.datacenter_id=", 24) != 0 &&
				pg_strncasecmp(item, "snowflake.machine_id=", 21) != 0)
				continue;
			db = OidIsValid(setting->setdatabase) ? get_database_name(setting->setdatabase) : NULL;
			role = OidIsValid(setting->setrole) ? GetUserNameFromId(setting->setrole, true) : NULL;
			appendStringInfo(&found, "%s%s %s, %s %s: %s",
							 found.len > 0 ? "; " : "",
							 OidIsValid(setting->setdatabase) ? "database" : "every",
							 OidIsValid(setting->setdatabase) ? quote_identifier(db ? db : "?") : "database",
							 OidIsValid(setting->setrole) ? "role" : "every",
							 OidIsValid(setting->setrole) ? quote_identifier(role ? role : "?") : "role",
							 item);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (found.len > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake_adopt_state() refused: database or role settings give node ids"),
				 errdetail("%s. They came with this data directory from the one it was copied from, which may still run those nodes; "
						   "sessions here would issue its IDs.", found.data),
				 errhint("Remove them (ALTER DATABASE ... RESET snowflake.machine_id, ALTER ROLE ... RESET ..., "
						 "or ALTER ROLE ... IN DATABASE ... RESET ...), adopt, then give the databases and roles the node ids this server is to run: "
						 "the original's only if this server replaces it for good and it is stopped.")));
}

/*
 * Refuse a hand adoption while prepared transactions wait (round 8, F3): one
 * that came with the copy may commit the original's catalog changes (node
 * settings, for one) after the adoption checked the catalog.  The query names
 * only pg_catalog objects, and reads no table (the function reads the shared
 * memory of two-phase commit): under a stalled disk it must not wait on one.
 */
static void
sf_refuse_prepared_transactions(void)
{
	int64		waiting;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_xact()", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the prepared transactions");
	waiting = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();

	if (waiting > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake_adopt_state() refused: %lld prepared transactions wait", (long long) waiting),
				 errdetail("A prepared transaction that came with this data directory from the one it was copied from could commit "
						   "the original's catalog changes (node settings, for one) after the adoption."),
				 errhint("Commit or roll back every prepared transaction (pg_prepared_xacts) first, then adopt.")));
}

/* snowflake_adopt_state(): this data directory takes over the node state it was copied with. */
Datum
snowflake_adopt_state(PG_FUNCTION_ARGS)
{
	bool		was_copy;

	sf_require_shared("snowflake_adopt_state()");
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s during recovery", "snowflake_adopt_state()"),
				 errhint("Run it after promotion, or set snowflake.failover_adopt = on before.")));
	was_copy = sf_shared->copied;
	if (was_copy)
	{
		/*
		 * Round 8, F5: the adoption takes effect at once and no rollback
		 * undoes it; the catalog it is checked against must not be changed
		 * by the same transaction (settings removed, then rolled back).  A
		 * transaction that wrote has an xid (a subtransaction's gives its
		 * parent one).
		 */
		if (TransactionIdIsValid(GetTopTransactionIdIfAny()))
			ereport(ERROR,
					(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
					 errmsg("snowflake_adopt_state() must run in a transaction that has changed nothing"),
					 errdetail("The adoption takes effect at once and no rollback undoes it, while the changes of its transaction "
							   "(node settings removed, for one) could still be rolled back."),
					 errhint("Commit or roll back first, then run SELECT <extension schema>.snowflake_adopt_state() (with search_path pinned, as the README's section Functions shows) as a statement of its own.")));
		sf_check_session_node("snowflake_adopt_state()");
		sf_refuse_carried_node_settings();
		sf_refuse_prepared_transactions();
		sf_mark_older_sessions();
	}
	sf_state_adopt(true);
	PG_RETURN_BOOL(was_copy);
}

/* snowflake_server_identity(): who this server is, for a node registry. */
Datum
snowflake_server_identity(PG_FUNCTION_ARGS)
{
	sf_require_shared("snowflake_server_identity()");
	PG_RETURN_TEXT_P(cstring_to_text(psprintf(UINT64_FORMAT ":%s", GetSystemIdentifier(),
											  sf_identity_text(&sf_shared->self))));
}

/*
 * snowflake_state(): the durable state at a glance, for monitoring: whether
 * generation can go on ('ok'), or why not ('damaged', 'copy'), how far the
 * durable mark reaches, which data directory owns the node state, whether the
 * reservation writer runs, and (1.2) how its writes go.  Version 1.1 declares
 * the first six columns only: the row is cut to what the catalog declares.
 */
Datum
snowflake_state(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[SF_STATE_COLS];
	bool		nulls[SF_STATE_COLS] = {0};
	uint64		reserved;
	uint64		started;
	const char *state;

	sf_require_shared("snowflake_state()");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts > SF_STATE_COLS)
		elog(ERROR, "snowflake_state() is declared with %d columns, this library knows %d",
			 tupdesc->natts, SF_STATE_COLS);

	if (sf_shared->status == SF_STATE_UNREADABLE)
		state = "unreadable";
	else if (sf_shared->status != SF_STATE_OK)
		state = "damaged";
	/* Round 10: snowflake.nodes stops generation too: say so. */
	else if (sf_shared->nodes_status == SF_STATE_UNREADABLE)
		state = "unreadable";
	else if (sf_shared->nodes_status != SF_STATE_OK)
		state = "damaged";
	else if (sf_shared->copied)
		state = "copy";
	else
		state = "ok";
	values[0] = CStringGetTextDatum(state);

	if (sf_shared->status != SF_STATE_OK)
		values[1] = CStringGetTextDatum(sf_shared->message);
	else if (sf_shared->nodes_status != SF_STATE_OK)
		values[1] = CStringGetTextDatum(psprintf("snowflake node file \"%s\": %s", SF_NODES_FILE, sf_shared->nodes_message));
	else if (sf_shared->copied)
	{
		/* Round 9: an adoption under way is no invitation to adopt again. */
		uint32		adopt = pg_atomic_read_u32(&sf_shared->adopt_wanted);

		values[1] = CStringGetTextDatum(adopt == SF_ADOPT_WRITING ?
										"An adoption is being written (write_in_progress_ms says for how long); the state becomes \"ok\" when the write completes, unless it fails (logged)." :
										adopt == SF_ADOPT_WANTED ?
										"An adoption waits for the reservation writer to begin writing it." :
										"The state file was written by another data directory; run snowflake_adopt_state() if this server replaces it.");
	}
	else
		nulls[1] = true;

	reserved = pg_atomic_read_u64(&sf_shared->reserved);
	if (reserved == 0)
		nulls[2] = true;		/* nothing reserved yet */
	else
		values[2] = TimestampTzGetDatum(sf_unix_ms_to_timestamptz((int64) reserved + SF_EPOCH_UNIX_MS));
	values[3] = CStringGetTextDatum(sf_identity_text(&sf_shared->owner));
	values[4] = CStringGetTextDatum(sf_identity_text(&sf_shared->self));
	values[5] = BoolGetDatum(sf_shared->worker_latch != NULL);

	/* 1.2: the writer's record. */
	values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->writes));
	values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->write_failures));
	values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->caller_writes));
	values[9] = Float8GetDatum((double) pg_atomic_read_u64(&sf_shared->write_slow_ns) / SF_NS_PER_MS);
	started = pg_atomic_read_u64(&sf_shared->write_started);
	if (started == 0)
		nulls[10] = true;
	else
		values[10] = Float8GetDatum((double) (sf_mono_ns() - (int64) started) / SF_NS_PER_MS);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * snowflake_accept_clock(): an operator accepts the wall clock as it is now,
 * after a forward jump held generation (or before one is seen).  Returns how
 * many ms the trusted time moved forward.  EXECUTE is revoked from PUBLIC.
 */
Datum
snowflake_accept_clock(PG_FUNCTION_ARGS)
{
	int64		moved;

	sf_require_shared("snowflake_accept_clock()");
	moved = sf_watch_accept();
	sf_mark_record_hold(false);
	PG_RETURN_INT64(moved);
}
