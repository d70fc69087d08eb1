/*
 * registry.c: this server's claim on its node in the fleet's registry
 * (snowflake.registry): the C side of snowflake_claim_node() and
 * snowflake_release_node(), the rule that makes a claim count only once its
 * transaction commits, the check of the claim where an ID is taken, and the
 * background worker that takes and renews the claim.
 *
 * The claim in shared memory (SnowflakeSlot.claim_until and claim_bound) is
 * permission to generate, so it is only ever granted at commit of the
 * transaction that wrote the registry row, and only if its lease has not
 * ended by then.  The lift of a node above the high-water mark a previous
 * holder left is made durable just before that commit (PRE_COMMIT: a claim
 * rolled back lifts nothing; a lift whose commit then fails stays, which only
 * restricts).  The fence of a release applies at once and stays even if its
 * transaction rolls back: with a foreign registry the row may have committed
 * remotely all the same, so only the next claim opens the node again.
 * Nothing here may ereport, allocate or sleep in the commit callback: the
 * transaction is already committed there.
 *
 * It sits below the generator (which calls sf_claim_refuse) and calls only
 * downward: the slots in shared memory (words, claims), the mark's policy
 * (sf_mark_await, to make a carried mark durable) and the clocks; never the
 * state file or WAL directly.  snowflake.c registers its worker.
 *
 * The worker runs snowflake_claim_node() as snowflake.registry_role, an
 * unprivileged role, with search_path pinned to pg_catalog, pg_temp, on a
 * schema-qualified registry: code a less privileged role planted in the
 * registry's database must never run with a superuser's rights.  It must never
 * write the registry other than through snowflake_claim_node().
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

#include "snowflake.h"

PGDLLEXPORT void snowflake_claimer_main(Datum main_arg);

PG_FUNCTION_INFO_V1(snowflake_note_claim);
PG_FUNCTION_INFO_V1(snowflake_note_release);
PG_FUNCTION_INFO_V1(snowflake_claim_token);


/*
 * A claim or release made by this backend's open transaction, applied to
 * shared memory at commit, dropped at abort or at the rollback of the
 * subtransaction that made it.
 */
typedef struct SfPendingClaim
{
	SubTransactionId subid;
	int			node;
	bool		release;		/* a release: the lease ends at commit */
	int64		until_ms;		/* claim: the lease's end, Unix ms */
	int64		bound_ms;		/* claim: no ID beyond this Unix ms */
	int64		carried_ms;		/* claim: lift above this Unix ms before commit, or -1 */
	uint64		expect_bound;	/* claim: the bound when it was noted; a fence since voids it */
	bool		token_noted;	/* a claim token was issued for the row (snowflake_claim_token) */
} SfPendingClaim;

/* Set while the registry worker runs its claim: snowflake_note_claim() may run then. */
static bool sf_claimer_active = false;

static SfPendingClaim *sf_pending = NULL;
static int	sf_npending = 0;
static int	sf_pending_size = 0;
static bool sf_callbacks_registered = false;

/*
 * Claim tokens: the registry row names its holder as identity/token, and the
 * token changes at every claim.  A block-level clone or snapshot of a holder
 * has the same identity (system identifier, data directory inode and birth
 * time), but not the tokens this postmaster issued: those live in memory that
 * the postmaster maps at start-up, shared with every child it forks and kept
 * across the re-initialisation of shared memory after a crash (so a crash
 * restart renews as before), and lost with the postmaster unless it exits
 * (SF_TOKEN_FILE): a start after the postmaster was killed, or a copy of a
 * running server, proves nothing.  The last SF_TOKEN_RING tokens noted count as
 * this server's: a claim that committed remotely but not locally, or two
 * claims of this server that overlapped, still renew.  claimed says, per
 * node, that a claim of this postmaster committed; cloned, that a renewal
 * found another token under this identity (fenced until the postmaster stops).
 * mine is, per node, the token this postmaster claims with: drawn at its first
 * claim of the node, then used by every claim of it until the postmaster
 * stops (a crash restart keeps it).  So the row's token changes at each
 * start, which is what tells copies apart (a copy of a running server has
 * none of the tokens drawn since its start), and claims that fail or roll
 * back, however many, push no token of this server out of the ring.
 */
#define SF_TOKEN_RING	64
#define SF_NODE_WORDS	((SF_NODE_COUNT + 31) / 32)

typedef struct SfTokens
{
	pg_atomic_uint32 next;
	pg_atomic_uint32 claimed[SF_NODE_WORDS];
	pg_atomic_uint32 cloned[SF_NODE_WORDS];
	pg_atomic_uint64 tokens[SF_TOKEN_RING];
	pg_atomic_uint64 mine[SF_NODE_COUNT];
} SfTokens;

static SfTokens *sf_tokens = NULL;

/*
 * The postmaster's tokens, kept in the data directory at its exit (all its
 * children have stopped: nothing generates or renews any more) and read at
 * the next start: so a restart of a server that stopped renews its claim at
 * once.  Copies of the data directory have the same file; the registry row
 * decides between them, since the first to renew replaces the row's token
 * with a new one, which the others never issued (they then wait).  A copy of
 * a running server that renewed since its start finds a token its file does
 * not hold.
 */
#define SF_TOKEN_FILE		"snowflake.claim_tokens"
#define SF_TOKEN_FILE_MAGIC	UINT64CONST(0x534654434c41494d)	/* "SFTCLAIM" */

/* ---- the check where an ID is taken (called from sf_reserve) ---- */

/*
 * Refuse an ID taken without a current claim (sf_claim_check in snowflake.h
 * decided): the lease ended (or was never taken), or the ID's ms passes the
 * bound of the claim.
 */
void
sf_claim_refuse(SnowflakeSlot *slot, int node, int64 now_ms, int64 last_tick, const char *caller)
{
	int64		until = (int64) pg_atomic_read_u64(&slot->claim_until);
	int64		bound = (int64) pg_atomic_read_u64(&slot->claim_bound);

	pg_atomic_fetch_add_u64(&slot->refusals, 1);

	if (until <= now_ms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s refused: this server holds no current registry claim for datacenter %d, machine %d",
						caller, SF_NODE_DC(node), SF_NODE_MC(node)),
				 errdetail("snowflake.require_claim is on; the claim was never taken since start-up, was released, or its lease ended."),
				 errhint("Run SELECT <extension schema>.snowflake_claim_node('<schema>.<registry table>'::pg_catalog.regclass, '5 minutes'::interval), and renew it before the lease ends (the registry worker, snowflake.registry, does both).")));

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s refused: the ID would pass the bound of this server's registry claim for datacenter %d, machine %d",
					caller, SF_NODE_DC(node), SF_NODE_MC(node)),
			 errdetail("snowflake.require_claim is on; IDs under a claim may run at most snowflake.max_lead_ms (as it was when the claim was taken) past the lease's end, "
					   "here %lld ms past the bound; a release (also one rolled back) fences the node at the last ID issued until the next claim.",
					   (long long) (last_tick + SF_EPOCH_UNIX_MS - bound)),
			 errhint("Renew the claim (<extension schema>.snowflake_claim_node('<schema>.<registry table>'::pg_catalog.regclass, '5 minutes'::interval)); after a release, claim the node again.")));
}

/* ---- pending claims and the transaction callbacks ---- */

static void
sf_pending_add(const SfPendingClaim *claim)
{
	if (sf_npending == sf_pending_size)
	{
		int			size = Max(8, sf_pending_size * 2);

		if (sf_pending == NULL)
			sf_pending = MemoryContextAlloc(TopMemoryContext, size * sizeof(SfPendingClaim));
		else
			sf_pending = repalloc(sf_pending, size * sizeof(SfPendingClaim));
		sf_pending_size = size;
	}
	sf_pending[sf_npending++] = *claim;
}


static void
sf_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (sf_npending > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that claimed or released a snowflake node"),
						 errdetail("The claim is recorded in this server's shared memory when its transaction commits; a prepared transaction commits elsewhere."),
						 errhint("Claim or release the node in a transaction of its own.")));
			break;

		case XACT_EVENT_PRE_COMMIT:

			/*
			 * Lift each node taken over above what its previous holder may
			 * have issued, durably, before the claim can count.  An error
			 * here aborts the transaction (and the claim).
			 */
			for (int i = 0; i < sf_npending && sf_shared != NULL; i++)
				if (!sf_pending[i].release && sf_pending[i].carried_ms >= 0)
					sf_lift_node(&sf_shared->slots[sf_pending[i].node].slot, sf_pending[i].carried_ms, "snowflake_claim_node()");
			break;

		case XACT_EVENT_COMMIT:
			/* Already committed: no error, no allocation from here on. */
			for (int i = 0; i < sf_npending && sf_shared != NULL; i++)
			{
				SfPendingClaim *c = &sf_pending[i];
				SnowflakeSlot *slot = &sf_shared->slots[c->node].slot;

				if (c->release)
					pg_atomic_write_u64(&slot->claim_until, 0);
				else if (c->token_noted && sf_tokens != NULL)
				{
					/*
					 * The row now carries a token of this postmaster: from
					 * here on, another token there means another server.
					 */
					pg_atomic_fetch_or_u32(&sf_tokens->claimed[c->node / 32], (uint32) 1 << (c->node % 32));
				}
				if (!c->release && c->until_ms > sf_wall_unix_ms())
				{
					uint64		expected = c->expect_bound;

					/*
					 * A claim whose lease ended before its commit never counts;
					 * nor does one whose node a release fenced since it was
					 * noted (the fence stands: the release records the last ID).
					 * The bound first: a reader of the new lease sees its bound.
					 */
					if (pg_atomic_compare_exchange_u64(&slot->claim_bound, &expected,
													   (uint64) Max(c->bound_ms, 0)))
					{
						pg_write_barrier();
						pg_atomic_write_u64(&slot->claim_until, (uint64) Max(c->until_ms, 0));
					}
				}
			}
			sf_npending = 0;
			break;

		case XACT_EVENT_ABORT:
			/* A release's fence stays: the registry may have committed it remotely. */
			sf_npending = 0;
			break;

		default:
			break;
	}
}

static void
sf_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			kept = 0;

	switch (event)
	{
		case SUBXACT_EVENT_COMMIT_SUB:
			for (int i = 0; i < sf_npending; i++)
				if (sf_pending[i].subid == mySubid)
					sf_pending[i].subid = parentSubid;
			break;

		case SUBXACT_EVENT_ABORT_SUB:
			for (int i = 0; i < sf_npending; i++)
				if (sf_pending[i].subid != mySubid)
					sf_pending[kept++] = sf_pending[i];
			sf_npending = kept;
			break;

		default:
			break;
	}
}

/* The node named by the first two arguments, checked; registers the callbacks once. */
static int
sf_claim_node_arg(FunctionCallInfo fcinfo, const char *caller)
{
	int32		datacenter;
	int32		machine;

	sf_require_shared(caller);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("datacenter_id and machine_id must not be null")));
	datacenter = PG_GETARG_INT32(0);
	machine = PG_GETARG_INT32(1);
	if (datacenter < 0 || datacenter > SF_MAX_DATACENTER)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("datacenter_id must be between 0 and %d, not %d", (int) SF_MAX_DATACENTER, datacenter)));
	if (machine < 0 || machine > SF_MAX_MACHINE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("machine_id must be between 0 and %d, not %d", (int) SF_MAX_MACHINE, machine)));

	if (!sf_callbacks_registered)
	{
		RegisterXactCallback(sf_xact_callback, NULL);
		RegisterSubXactCallback(sf_subxact_callback, NULL);
		sf_callbacks_registered = true;
	}
	return datacenter * (int) (SF_MAX_MACHINE + 1) + machine;
}

/*
 * Lift the node's generator above carried_ms (the latest ms a previous holder
 * may have issued), as replay lifts slots, never moving it back, and make that
 * durable: a restart before the first ID must not forget it (the clean
 * shutdown's mark covers every lifted slot, sf_mark_shutdown).  carried_ms was
 * checked against its bounds by snowflake_note_claim().
 */
void
sf_lift_node(SnowflakeSlot *slot, int64 carried_ms, const char *caller)
{
	int64		tick = Min(carried_ms - SF_EPOCH_UNIX_MS, SF_MAX_TICK);
	uint64		target = SF_WORD(tick, SF_MAX_SEQUENCE);
	uint64		old = pg_atomic_read_u64(&slot->word);

	if (tick < 0)
		return;
	while (old < target && !pg_atomic_compare_exchange_u64(&slot->word, &old, target))
		;
	if (tick > (int64) pg_atomic_read_u64(&sf_shared->reserved) &&
		!sf_mark_await(tick, sf_mono_ns() + (int64) Max(sf_max_wait_ms, SF_MARK_GRACE_MS) * SF_NS_PER_MS, NULL, 0))
		sf_mark_refuse(caller);
}

/* The longest lease snowflake_claim_node() takes, in ms. */
#define SF_LEASE_MAX_MS		(24 * 60 * 60 * 1000)

/*
 * snowflake_note_claim(datacenter_id, machine_id, until, carried_ms): record a
 * registry lease that snowflake_claim_node() took, to count from the commit of
 * this transaction if its lease has not ended by then; carried_ms (null: none)
 * is the high-water mark a previous holder left, which the node is lifted
 * above, durably, just before that commit.  Returns the claim's bound: until
 * plus snowflake.max_lead_ms, in Unix ms.  (Version 1.1 calls it with the first
 * three arguments only.)
 *
 * It accepts only what a claim could have produced: a lease ending at most a
 * day from now (for the registry worker: its own node, at most
 * snowflake.registry_lease_ms from now), and a carried mark between 0 and
 * until plus snowflake.max_lead_ms.  Only a superuser may call it, or the
 * registry role inside the worker's claim: a session of that role cannot.
 */
Datum
snowflake_note_claim(PG_FUNCTION_ARGS)
{
	int			node = sf_claim_node_arg(fcinfo, "snowflake_note_claim()");
	TimestampTz until;
	SfPendingClaim claim = {0};
	int64		now_ms = sf_wall_unix_ms();
	int64		max_until;

	if (!superuser() && !sf_claimer_active)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function snowflake_note_claim"),
				 errdetail("Only a superuser, or snowflake.registry_role inside the registry worker's claim, may record a claim."),
				 errhint("Claim with <extension schema>.snowflake_claim_node('<schema>.<registry table>'::pg_catalog.regclass, '5 minutes'::interval) as a superuser, or let the registry worker claim.")));
	if (!superuser() &&
		node != sf_datacenter_id * (int) (SF_MAX_MACHINE + 1) + sf_machine_id)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the registry worker may record a claim only for this server's node, datacenter %d, machine %d",
						sf_datacenter_id, sf_machine_id)));

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("until must not be null")));
	until = PG_GETARG_TIMESTAMPTZ(2);
	if (TIMESTAMP_NOT_FINITE(until))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("until must be a finite timestamp")));
	max_until = now_ms + (superuser() ? SF_LEASE_MAX_MS : sf_registry_lease_ms);
	if (sf_timestamptz_to_unix_ms(until) > max_until)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("until must be at most %s ahead of the clock",
						superuser() ? "one day" : "snowflake.registry_lease_ms"),
				 errdetail("A claim's lease ends at most %lld ms from now, not %lld ms.",
						   (long long) (max_until - now_ms),
						   (long long) (sf_timestamptz_to_unix_ms(until) - now_ms))));

	claim.subid = GetCurrentSubTransactionId();
	claim.node = node;
	claim.until_ms = Max(sf_timestamptz_to_unix_ms(until), 0);
	claim.bound_ms = claim.until_ms + sf_max_lead_ms;
	claim.carried_ms = -1;
	claim.expect_bound = pg_atomic_read_u64(&sf_shared->slots[node].slot.claim_bound);

	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
	{
		int64		carried = PG_GETARG_INT64(3);

		if (carried < 0 || carried > claim.bound_ms)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("carried_ms must be between 0 and %lld (the lease's end plus snowflake.max_lead_ms), not %lld",
							(long long) claim.bound_ms, (long long) carried),
					 errdetail("No holder could have issued an ID beyond its lease plus snowflake.max_lead_ms.")));
		claim.carried_ms = carried;
	}

	sf_pending_add(&claim);
	PG_RETURN_INT64(claim.bound_ms);
}

/*
 * Fence the node at once: no ID past the last one issued, until the next
 * claim.  Returns the tick of the last ID.  No error, no allocation.
 */
static int64
sf_fence_node(SnowflakeSlot *slot)
{
	uint64		old;
	int64		bound = (int64) pg_atomic_read_u64(&slot->claim_bound);
	int64		fence = Min(bound, SF_WORD_TICK(pg_atomic_read_u64(&slot->word)) + SF_EPOCH_UNIX_MS);

	/*
	 * Always a new value (a claim noted before compares the bound it saw at
	 * commit, and must see it changed); one ms lower still stops every ID
	 * past the sealed word below.
	 */
	if (fence == bound)
		fence--;
	pg_atomic_write_u64(&slot->claim_bound, (uint64) fence);

	/*
	 * Seal the ms of the last ID.  A generator that read the bound before the
	 * fence fails its compare-and-swap against the sealed word, and on its
	 * next round reads the fence (sf_claim_check reads the word, then the
	 * bound); one that got in first is seen here and sealed with.
	 */
	old = pg_atomic_read_u64(&slot->word);
	for (;;)
	{
		uint64		sealed = SF_WORD(SF_WORD_TICK(old), SF_MAX_SEQUENCE);

		if (old == sealed || pg_atomic_compare_exchange_u64(&slot->word, &old, sealed))
			break;
	}
	return SF_WORD_TICK(old);
}

/*
 * snowflake_note_release(datacenter_id, machine_id): fence the node at once (no
 * ID past the last one issued, kept even if this transaction rolls back), end its
 * lease at commit, and return the last ms any ID of the node issued here may
 * carry, for the registry row.
 */
Datum
snowflake_note_release(PG_FUNCTION_ARGS)
{
	int			node = sf_claim_node_arg(fcinfo, "snowflake_note_release()");
	SnowflakeSlot *slot = &sf_shared->slots[node].slot;
	SfPendingClaim claim = {0};
	int64		tick;

	claim.subid = GetCurrentSubTransactionId();
	claim.node = node;
	claim.release = true;

	/* The fence: for good, until the next claim (a rollback keeps it). */
	sf_pending_add(&claim);
	tick = sf_fence_node(slot);

	PG_RETURN_INT64(tick + SF_EPOCH_UNIX_MS);
}

/*
 * Take back the tokens the postmaster kept at its last exit.  The file stays:
 * a start that ends before any claim (postgres -C, a failed start) must not
 * lose them, and a copy of it proves nothing the registry row does not decide.
 */
static void
sf_tokens_load(void)
{
	uint64		buf[SF_TOKEN_RING + 2];
	/* O_NONBLOCK: a FIFO put there must not hold the postmaster in open(). */
	int			fd = open(SF_TOKEN_FILE, O_RDONLY | O_NONBLOCK | PG_BINARY, 0);
	struct stat st;
	ssize_t		n;

	if (fd < 0)
		return;
	/* Only a regular file counts: anything else is as good as lost (the next claim waits). */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
	{
		close(fd);
		return;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n == (ssize_t) sizeof(buf) && buf[0] == SF_TOKEN_FILE_MAGIC)
	{
		/* Where the next token goes: over the oldest, as before the exit. */
		pg_atomic_write_u32(&sf_tokens->next, (uint32) (buf[1] % SF_TOKEN_RING));
		for (int i = 0; i < SF_TOKEN_RING; i++)
			pg_atomic_write_u64(&sf_tokens->tokens[i], buf[i + 2]);
	}
}

/*
 * At the postmaster's exit (status 0: a shutdown, its children gone), keep
 * its tokens for the next start, unless it never held a claim or found a
 * copy of itself (then the next start must wait, as after a crash).  Any
 * failure only leaves the file out, with the same effect.
 */
static void
sf_tokens_save(int code, Datum arg)
{
	uint64		buf[SF_TOKEN_RING + 2];
	bool		claimed = false;
	int			fd;

	if (code != 0 || sf_tokens == NULL)
		return;
	for (int i = 0; i < SF_NODE_WORDS; i++)
	{
		if (pg_atomic_read_u32(&sf_tokens->cloned[i]) != 0)
			return;
		if (pg_atomic_read_u32(&sf_tokens->claimed[i]) != 0)
			claimed = true;
	}
	if (!claimed)
		return;
	buf[0] = SF_TOKEN_FILE_MAGIC;
	buf[1] = pg_atomic_read_u32(&sf_tokens->next) % SF_TOKEN_RING;
	for (int i = 0; i < SF_TOKEN_RING; i++)
		buf[i + 2] = pg_atomic_read_u64(&sf_tokens->tokens[i]);
	fd = open(SF_TOKEN_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY, 0600);
	if (fd < 0)
		return;
	if (write(fd, buf, sizeof(buf)) != (ssize_t) sizeof(buf) || pg_fsync(fd) != 0)
	{
		close(fd);
		unlink(SF_TOKEN_FILE ".tmp");
		return;
	}
	close(fd);
	if (rename(SF_TOKEN_FILE ".tmp", SF_TOKEN_FILE) != 0)
		unlink(SF_TOKEN_FILE ".tmp");
}

/*
 * Map the claim tokens, in the postmaster (shared_preload_libraries), before
 * any child is forked: every child inherits the mapping, and the postmaster
 * keeps it when shared memory is made anew after a crash.
 */
void
sf_registry_tokens_init(void)
{
	void	   *p;

	if (sf_tokens != NULL)
		return;
	p = mmap(NULL, sizeof(SfTokens), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		ereport(FATAL,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not map memory for snowflake's registry claim tokens: %m")));
	sf_tokens = (SfTokens *) p;
	pg_atomic_init_u32(&sf_tokens->next, 0);
	for (int i = 0; i < SF_NODE_WORDS; i++)
	{
		pg_atomic_init_u32(&sf_tokens->claimed[i], 0);
		pg_atomic_init_u32(&sf_tokens->cloned[i], 0);
	}
	for (int i = 0; i < SF_TOKEN_RING; i++)
		pg_atomic_init_u64(&sf_tokens->tokens[i], 0);
	for (int i = 0; i < SF_NODE_COUNT; i++)
		pg_atomic_init_u64(&sf_tokens->mine[i], 0);

	/* Only the postmaster takes the tokens back and keeps them at its exit. */
	if (IsUnderPostmaster || !IsPostmasterEnvironment)
		return;
	sf_tokens_load();
	on_proc_exit(sf_tokens_save, 0);
}

static bool
sf_token_bit(pg_atomic_uint32 *words, int node)
{
	return (pg_atomic_read_u32(&words[node / 32]) & ((uint32) 1 << (node % 32))) != 0;
}

/* Whether the token (16 hex digits) is one this postmaster issued. */
static bool
sf_token_ours(const char *text)
{
	uint64		token = 0;

	if (text == NULL || strlen(text) != 16)
		return false;
	for (const char *c = text; *c; c++)
	{
		int			d;

		if (*c >= '0' && *c <= '9')
			d = *c - '0';
		else if (*c >= 'a' && *c <= 'f')
			d = *c - 'a' + 10;
		else
			return false;
		token = (token << 4) | (uint64) d;
	}
	if (token == 0)
		return false;
	for (int i = 0; i < SF_TOKEN_RING; i++)
		if (pg_atomic_read_u64(&sf_tokens->tokens[i]) == token)
			return true;
	return false;
}

/*
 * snowflake_claim_token(datacenter_id, machine_id, held, claiming,
 * OUT token text, OUT ours boolean): held is the claim token the registry row
 * carries under this server's identity (null: the row names another server,
 * or no token).  ours says whether this postmaster issued it.  With claiming,
 * token is a new token for the row (noted as this server's, counting once
 * this transaction commits); and a held token that is not ours, for a node
 * this postmaster has held a claim on since it started, means that another
 * server with this identity (a block-level clone or snapshot) or an edit
 * renewed the claim: the node is fenced at once, and stays fenced, and
 * refused, until the postmaster stops.  Superuser or the registry worker only.
 */
Datum
snowflake_claim_token(PG_FUNCTION_ARGS)
{
	int			node;
	char	   *held;
	bool		claiming;
	bool		ours;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("claiming must not be null")));
	node = sf_claim_node_arg(fcinfo, "snowflake_claim_token()");
	if (!sf_claimer_active && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function snowflake_claim_token"),
				 errdetail("Only a superuser, or snowflake.registry_role inside the registry worker's claim, may take a claim token.")));
	if (sf_tokens == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake's registry claim tokens are not available"),
				 errhint("Add snowflake to shared_preload_libraries and restart the server.")));
	held = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	claiming = PG_GETARG_BOOL(3);
	ours = sf_token_ours(held);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	if (claiming && (sf_token_bit(sf_tokens->cloned, node) ||
					 (held != NULL && !ours && sf_token_bit(sf_tokens->claimed, node))))
	{
		bool		first = !sf_token_bit(sf_tokens->cloned, node);

		/* Stop at once: another server may be generating under this node now. */
		pg_atomic_fetch_or_u32(&sf_tokens->cloned[node / 32], (uint32) 1 << (node % 32));
		(void) sf_fence_node(&sf_shared->slots[node].slot);
		pg_atomic_write_u64(&sf_shared->slots[node].slot.claim_until, 0);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("another server renewed this server's claim on datacenter %d, machine %d: a block-level clone or snapshot of this server may be running",
						SF_NODE_DC(node), SF_NODE_MC(node)),
				 first ?
				 errdetail("The registry row names this server's identity (system identifier, data directory inode and birth time) with claim token %s, which this server did not issue. "
						   "A copy of this server made below the file system (a disk image, an LVM, ZFS or cloud-volume snapshot or clone) has the same identity; "
						   "so does a server the row was edited for. This server stopped generating under the node, and claims it no more until it restarts.",
						   held) :
				 errdetail("Since this server found another claim token under its identity in the registry row, it generates nothing under the node and claims it no more until it restarts."),
				 errhint("Stop the copy for good, or give it its own snowflake.datacenter_id and snowflake.machine_id. "
						 "Then restart this server: it claims the node again once the copy's lease has ended.")));
	}

	/*
	 * Under this server's identity with a token this postmaster did not
	 * issue, and no claim of it since it started: a new start, or a copy.
	 * No token yet: the claim decides (it waits while that lease lasts), and
	 * asks again with held null to take the node over.  So rounds that only
	 * wait issue no tokens that would push this server's out of the ring.
	 */
	if (claiming && held != NULL && !ours)
		claiming = false;

	if (claiming)
	{
		uint64		token = pg_atomic_read_u64(&sf_tokens->mine[node]);
		uint64		none = 0;
		SfPendingClaim claim = {0};

		/* This postmaster's token for the node: drawn once, then kept (see SfTokens). */
		if (token == 0)
		{
			uint64		drawn = 0;

			while (drawn == 0)
				if (!pg_strong_random(&drawn, sizeof(drawn)))
					ereport(ERROR,
							(errcode(ERRCODE_INTERNAL_ERROR),
							 errmsg("could not generate a random claim token")));
			/* Into the ring before it can reach a row; a concurrent first claim may win the slot. */
			pg_atomic_write_u64(&sf_tokens->tokens[pg_atomic_fetch_add_u32(&sf_tokens->next, 1) % SF_TOKEN_RING],
								drawn);
			if (pg_atomic_compare_exchange_u64(&sf_tokens->mine[node], &none, drawn))
				token = drawn;
			else
				token = none;
		}
		claim.subid = GetCurrentSubTransactionId();
		claim.node = node;
		claim.carried_ms = -1;
		claim.token_noted = true;
		sf_pending_add(&claim);
		values[0] = CStringGetTextDatum(psprintf("%016llx", (unsigned long long) token));
	}
	else
		nulls[0] = true;
	values[1] = BoolGetDatum(ours);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* ---- settings ---- */

/* snowflake.registry: empty, or a schema-qualified table name. */
bool
sf_registry_check_hook(char **newval, void **extra, GucSource source)
{
	char	   *copy;
	List	   *names;
	bool		ok;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;

	copy = pstrdup(*newval);
	ok = SplitIdentifierString(copy, '.', &names) && list_length(names) == 2;
	if (!ok)
	{
		GUC_check_errmsg("snowflake.registry must be a schema-qualified table name, not \"%s\"", *newval);
		GUC_check_errdetail("The registry worker looks the registry up by this name; a name without a schema could find a table another role created.");
		GUC_check_errhint("Write it as schema.table, for example 'public.snowflake_registry'.");
	}
	list_free(names);
	pfree(copy);
	return ok;
}

/* ---- the background worker ---- */

/* The role the claim runs as: set, existing, and not a superuser; else an error. */
static Oid
sf_registry_role_oid(void)
{
	Oid			role;

	if (sf_registry_role == NULL || sf_registry_role[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake.registry_role is not set"),
				 errdetail("The registry worker runs the claim as that role, never as a superuser."),
				 errhint("Create an unprivileged role with EXECUTE on snowflake_claim_node() and snowflake_note_claim() and SELECT, INSERT and UPDATE on the registry, "
						 "set snowflake.registry_role to it and reload (see Running a fleet in the README).")));
	role = get_role_oid(sf_registry_role, true);
	if (!OidIsValid(role))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" named by snowflake.registry_role does not exist", sf_registry_role)));
	if (superuser_arg(role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("snowflake.registry_role \"%s\" is a superuser", sf_registry_role),
				 errdetail("Objects that other roles can create in the registry's database (triggers, tables) would run with its rights."),
				 errhint("Name an unprivileged role with only the rights the claim needs (see Running a fleet in the README).")));
	return role;
}

/*
 * Refuse a registry role that can reach more than the claim needs: one that
 * is, or is a member of, a role with SUPERUSER, CREATEROLE, CREATEDB,
 * BYPASSRLS or REPLICATION, or a predefined role that reads or writes files,
 * runs programs, or reads or writes all data.  Runs as the worker's own
 * (superuser) identity, on the catalogs only.
 */
static void
sf_registry_role_check(Oid role)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(role)};

	if (SPI_execute_with_args("SELECT a.rolname::pg_catalog.text, "
							  "pg_catalog.concat_ws(', ', CASE WHEN a.rolsuper THEN 'SUPERUSER' END, "
							  "CASE WHEN a.rolcreaterole THEN 'CREATEROLE' END, CASE WHEN a.rolcreatedb THEN 'CREATEDB' END, "
							  "CASE WHEN a.rolbypassrls THEN 'BYPASSRLS' END, CASE WHEN a.rolreplication THEN 'REPLICATION' END, "
							  "CASE WHEN a.rolname IN ('pg_execute_server_program', 'pg_read_server_files', 'pg_write_server_files', "
							  "'pg_read_all_data', 'pg_write_all_data') THEN 'predefined' END) "
							  "FROM pg_catalog.pg_authid a "
							  "WHERE pg_catalog.pg_has_role($1, a.oid, 'MEMBER') "
							  "AND (a.rolsuper OR a.rolcreaterole OR a.rolcreatedb OR a.rolbypassrls OR a.rolreplication "
							  "OR a.rolname IN ('pg_execute_server_program', 'pg_read_server_files', 'pg_write_server_files', "
							  "'pg_read_all_data', 'pg_write_all_data')) "
							  "ORDER BY a.oid <> $1, a.rolname",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up snowflake.registry_role");
	if (SPI_processed > 0)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *what = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 strcmp(name, sf_registry_role) == 0 ?
				 errmsg("snowflake.registry_role \"%s\" has %s", sf_registry_role, what) :
				 errmsg("snowflake.registry_role \"%s\" is a member of role \"%s\" (%s)", sf_registry_role, name, what),
				 errdetail("Code that runs as the registry role could use that to gain a superuser's rights or reach the server's files and programs."),
				 errhint("Name a role with LOGIN at most, and only the grants the claim needs (see docs/fleet.md).")));
	}
}

/* Set a setting for the worker's session, over anything ALTER ROLE/DATABASE set. */
static void
sf_claimer_set(const char *name, const char *value)
{
	SetConfigOption(name, value, PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * Undo what a setting of the database or of a role (applied at connection)
 * could use against the claim: act as the bootstrap superuser the worker
 * connected as, and override the settings that change who runs the claim, how
 * an error ends (exit_on_error), or how its SQL is read.  The
 * owner of the database can still rename or drop it: it must be a superuser
 * (docs/fleet.md); a WARNING says so once per start otherwise.
 */
static void
sf_claimer_immune(void)
{
	HeapTuple	tup;

	StartTransactionCommand();
	SetConfigOption("session_authorization", GetUserNameFromId(GetAuthenticatedUserId(), false),
					PGC_SUSET, PGC_S_OVERRIDE);
	sf_claimer_set("role", "none");
	sf_claimer_set("statement_timeout", "0");
	sf_claimer_set("exit_on_error", "off");
	sf_claimer_set("standard_conforming_strings", "on");
	sf_claimer_set("transform_null_equals", "off");
	sf_claimer_set("check_function_bodies", "on");
	sf_claimer_set("max_parallel_workers_per_gather", "0");
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	if (HeapTupleIsValid(tup))
	{
		Oid			owner = ((Form_pg_database) GETSTRUCT(tup))->datdba;

		if (!superuser_arg(owner))
			ereport(WARNING,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("snowflake.registry_database \"%s\" is owned by role \"%s\", which is not a superuser",
							sf_registry_database, GetUserNameFromId(owner, false)),
					 errdetail("The owner of the database can rename or drop it, and so stop the registry worker from claiming: generation then stops at the end of the lease."),
					 errhint("Give the database to a superuser (ALTER DATABASE %s OWNER TO a superuser), or set snowflake.registry_database to one a superuser owns.",
							 quote_identifier(sf_registry_database))));
		ReleaseSysCache(tup);
	}
	CommitTransactionCommand();
}

/*
 * One claim or renewal, in its own transaction, with a lock timeout of a
 * fifth of the lease and a statement timeout of a quarter; true only if the claim counted (it
 * committed before its lease ended).  On failure, *why is the reason
 * (palloc'd in the caller's context) and *edata_out the error, if any.
 */
static bool
sf_claim_once(char **why, ErrorData **edata_out)
{
	MemoryContext caller = CurrentMemoryContext;
	volatile bool ok = false;
	volatile int64 until_ms = 0;
	char		timeout[32];

	*why = NULL;
	*edata_out = NULL;
	/* A lock wait ends first (lock_timeout), any other stall by the statement timeout. */
	snprintf(timeout, sizeof(timeout), "%d", Max(sf_registry_lease_ms / 5, 200));
	sf_claimer_set("lock_timeout", timeout);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		/* SPI arms no statement timeout of its own: the whole claim gets one. */
		enable_timeout_after(STATEMENT_TIMEOUT, Max(sf_registry_lease_ms / 4, 250));
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
			Oid			role = sf_registry_role_oid();
			Oid			save_userid;
			int			save_sec_context;
			bool		isnull;
			Datum		d;

			sf_registry_role_check(role);

			values[0] = CStringGetTextDatum(sf_registry);
			values[1] = Float8GetDatum(sf_registry_lease_ms / 1000.0);

			/*
			 * As the registry role, in a security-restricted operation (as
			 * PostgreSQL runs a table owner's code in maintenance commands);
			 * an error restores the user at abort.
			 */
			GetUserIdAndSecContext(&save_userid, &save_sec_context);
			SetUserIdAndSecContext(role, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
								   SECURITY_RESTRICTED_OPERATION);
			sf_claimer_active = true;
			if (SPI_execute_with_args(sql, 2, types, values, NULL, false, 1) != SPI_OK_SELECT ||
				SPI_processed != 1)
				elog(ERROR, "could not run snowflake_claim_node()");
			sf_claimer_active = false;
			SetUserIdAndSecContext(save_userid, save_sec_context);
			d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
			if (isnull || TIMESTAMP_NOT_FINITE(DatumGetTimestampTz(d)))
				elog(ERROR, "snowflake_claim_node() returned no lease");
			until_ms = sf_timestamptz_to_unix_ms(DatumGetTimestampTz(d));
			ok = true;
		}

		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		disable_timeout(STATEMENT_TIMEOUT, false);
		/* A timeout that fired during the commit cancels nothing now. */
		if (get_timeout_indicator(STATEMENT_TIMEOUT, true))
			QueryCancelPending = false;
	}
	PG_CATCH();
	{
		disable_timeout(STATEMENT_TIMEOUT, false);
		sf_claimer_active = false;
		MemoryContextSwitchTo(caller);
		*edata_out = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ok = false;
	}
	PG_END_TRY();

	pgstat_report_activity(STATE_IDLE, NULL);
	MemoryContextSwitchTo(caller);
	if (ok && until_ms <= sf_wall_unix_ms())
	{
		*why = psprintf("the claim committed after its lease had ended (%lld ms ago): it does not count",
						(long long) (sf_wall_unix_ms() - until_ms));
		ok = false;
	}
	else if (ok && sf_datacenter_id >= 0 && sf_machine_id >= 0 &&
			 (int64) pg_atomic_read_u64(&sf_shared->slots[sf_datacenter_id * (int) (SF_MAX_MACHINE + 1) +
														  sf_machine_id].slot.claim_until) != until_ms)
	{
		*why = pstrdup("the claim committed, but a release of the node (or another claim) came between: it does not count");
		ok = false;
	}
	return ok;
}

/*
 * Log a failed round: at once when the reason changes, else at most once a
 * minute, saying how many rounds failed since the last line.
 */
static char sf_failed_last[256] = "";
static int64 sf_failed_logged_ns = 0;
static int	sf_failed_suppressed = 0;

static void
sf_claim_log_failure(const char *why, ErrorData *edata)
{
	char	   *last = sf_failed_last;
	const char *reason = why ? why : edata->message;
	int64		now = sf_mono_ns();

	if (strncmp(last, reason, sizeof(sf_failed_last) - 1) == 0 && sf_failed_logged_ns != 0 &&
		now - sf_failed_logged_ns < (int64) 60000 * SF_NS_PER_MS)
	{
		sf_failed_suppressed++;
		return;
	}
	strlcpy(last, reason, sizeof(sf_failed_last));
	sf_failed_logged_ns = now;
	ereport(WARNING,
			(errmsg("snowflake could not claim this server's node in registry \"%s\": %s",
					sf_registry, reason),
			 sf_failed_suppressed > 0 ?
			 errdetail("%d more rounds failed, as reported before, since that report.", sf_failed_suppressed) :
			 (edata && edata->detail) ? errdetail("%s", edata->detail) : 0,
			 (edata && edata->hint) ? errhint("%s", edata->hint) : 0));
	sf_failed_suppressed = 0;
}

void
snowflake_claimer_main(Datum main_arg)
{
	bool		failing = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* ALTER DATABASE ... ALLOW_CONNECTIONS false must not stop the claim. */
	BackgroundWorkerInitializeConnection(sf_registry_database, NULL, BGWORKER_BYPASS_ALLOWCONN);
	sf_claimer_immune();

	/*
	 * Nothing a role can create may be found by an unqualified name, for the
	 * whole session: this overrides ALTER ROLE/DATABASE settings too.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);

	/* A database or role setting must not stop or weaken the claim. */
	sf_claimer_set("default_transaction_read_only", "off");
	sf_claimer_set("default_transaction_isolation", "read committed");
	sf_claimer_set("idle_in_transaction_session_timeout", "0");

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
		{
			char	   *why;
			ErrorData  *edata;

			if (sf_claim_once(&why, &edata))
			{
				if (failing)
					ereport(LOG,
							(errmsg("snowflake claimed this server's node in registry \"%s\" again", sf_registry),
							 sf_failed_suppressed > 0 ?
							 errdetail("%d more rounds failed, as reported before, since that report.", sf_failed_suppressed) : 0));
				/* The next failure is reported at once. */
				failing = false;
				sf_failed_last[0] = '\0';
				sf_failed_suppressed = 0;
				wait_ms = sf_registry_lease_ms / 3;
			}
			else
			{
				sf_claim_log_failure(why, edata);
				if (edata)
					FreeErrorData(edata);
				failing = true;
				wait_ms = Min(sf_registry_lease_ms / 10, 5000);
			}
		}

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(wait_ms, 100),
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
