/*
 * snowflake.h: what the parts of the extension share: settings, the shared
 * memory layout and the entry points of each source file.
 *
 * Locking rules (shared memory, see shmem.c):
 *
 * - SnowflakeSlot.word is only ever advanced, by compare-and-swap, and never
 *   under a lock: the hot path takes no lock at all.
 * - SnowflakeShared.reserved (the durable mark, in ticks) only grows while the
 *   server runs.  It is raised only by the holder of SnowflakeShared->lock in
 *   exclusive mode, after the state file that records the new value has been
 *   fsynced and durably renamed.  Readers load it without a lock.
 * - worker_latch is set and cleared by the worker itself; anyone may read it
 *   without a lock and set the latch (a stale pointer costs a spurious wake-up
 *   of another process, nothing more).
 * - The state fields (status, message, floor, self_*) are set at shared memory
 *   start-up, in the postmaster, before any backend exists, and are read-only
 *   afterwards.  owner_* and copied change only under the lock (adoption);
 *   copied is read without it.
 * - Counters are atomics, updated without a lock.
 * - Nothing may ereport, allocate or sleep while holding the lock: the file
 *   code returns an error description, which is reported after release.
 */
#ifndef SNOWFLAKE_H
#define SNOWFLAKE_H

#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/lwlock.h"

#include "layout.h"

/* Settings (snowflake.c). */
extern int	sf_datacenter_id;
extern int	sf_machine_id;
extern int	sf_max_lead_ms;
extern int	sf_max_wait_ms;
extern int	sf_reservation_ms;
extern bool sf_failover_adopt;
extern bool sf_require_claim;
extern char *sf_registry;
extern char *sf_registry_database;
extern int	sf_registry_lease_ms;

#define SF_NODE_UNSET		(-1)
#define SF_MAX_LEAD_LIMIT	3600000		/* 1 hour */
#define SF_MAX_N			10000000	/* snowflake_next_n's bound */

/* One node's generator, alone on its cache lines. */
typedef struct SnowflakeSlot
{
	pg_atomic_uint64 word;		/* last issued tick << 12 | sequence */
	pg_atomic_uint64 clock_last;	/* latest wall clock seen here, Unix ms */
	pg_atomic_uint64 clock_high;	/* highest wall clock seen here, Unix ms */
	pg_atomic_uint64 rollbacks;		/* backward clock steps seen */
	pg_atomic_uint64 max_rollback;	/* largest of them, in ms */
	pg_atomic_uint64 waits;		/* calls that slept */
	pg_atomic_uint64 refusals;	/* calls refused for time */
	pg_atomic_uint64 claim_until;	/* registry lease of this node, Unix ms */
	pg_atomic_uint32 used;		/* issued an ID since start-up */
} SnowflakeSlot;

typedef union SnowflakeSlotPadded
{
	SnowflakeSlot slot;
	char		pad[2 * PG_CACHE_LINE_SIZE];
} SnowflakeSlotPadded;

typedef enum SnowflakeStateStatus
{
	SF_STATE_OK,				/* file loaded, or none yet (new cluster) */
	SF_STATE_DAMAGED			/* unusable: generation refuses */
} SnowflakeStateStatus;

typedef struct SnowflakeShared
{
	LWLock	   *lock;			/* serialises writes of the state file */
	SnowflakeStateStatus status;
	char		message[256];	/* why the state is damaged */
	uint64		floor;			/* tick of the mark loaded at start-up */
	uint64		clock_seen;		/* wall clock (Unix ms) the file was written at */
	/* The data directory that owns the node state, and this one (dev, inode). */
	uint64		owner_dev;
	uint64		owner_ino;
	uint64		self_dev;
	uint64		self_ino;
	volatile bool copied;		/* owner differs: generation waits for adoption */
	char		pad1[PG_CACHE_LINE_SIZE];
	pg_atomic_uint64 reserved;	/* durable mark: no ID beyond this tick */
	char		pad2[PG_CACHE_LINE_SIZE];
	void	   *volatile worker_latch;	/* the worker's latch, NULL when none runs */
	char		pad3[PG_CACHE_LINE_SIZE];
	SnowflakeSlotPadded slots[SF_NODE_COUNT];
} SnowflakeShared;

/* shmem.c */
extern SnowflakeShared *sf_shared;
extern void sf_shmem_install_hooks(void);
extern void sf_require_shared(const char *caller);

/* state.c: the durable state file */
#define SF_STATE_FILE		"snowflake.state"
#define SF_STATE_TMP_FILE	"snowflake.state.tmp"

typedef struct SnowflakeStateResult
{
	bool		ok;
	int			save_errno;
	const char *action;			/* what failed: "open", "write", ... */
	const char *path;
} SnowflakeStateResult;

extern void sf_state_load(SnowflakeShared *shared);
extern SnowflakeStateResult sf_state_write(uint64 mark_tick, int64 wall_unix_ms, bool clean);
extern void sf_state_shutdown(SnowflakeShared *shared);
extern bool sf_mark_raise(int64 need_tick, int64 now_tick, bool wait, int elevel);
extern void sf_mark_replayed(uint64 mark_tick);
extern void sf_state_adopt(void);

/* wal.c: the mark in WAL, for standbys */
extern void sf_wal_register(void);
extern void sf_wal_log_mark(uint64 mark_tick);
extern void sf_mark_raise_soon(int64 need_tick, int64 now_tick);

/* worker.c: keeps the durable mark ahead of generation */
extern void sf_worker_register(void);
extern void sf_bgworker_register(const char *name, const char *function, int flags,
								 BgWorkerStartTime start, int restart_s);

/* claimer.c: keeps this server's registry claim renewed */
extern void sf_claimer_register(void);

/* generator.c */
extern int64 sf_wall_unix_ms(void);
extern uint64 sf_reserve(int node, int64 count, const char *caller);
extern int	sf_current_node(const char *caller);

#endif							/* SNOWFLAKE_H */
