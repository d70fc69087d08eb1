/*
 * snowflake.h: what the parts of the extension share: settings, the shared
 * memory layout and the entry points of each source file.
 *
 * The files call only downward, in this order (each header comment says what
 * its file may touch):
 *
 *   snowflake.c   module entry, settings, hooks
 *   functions.c   SQL-callable wrappers
 *   worker.c      the reservation writer (a background worker)
 *   generator.c   hands out IDs
 *   registry.c    the node's registry claim: recorded at commit, checked by
 *                 the generator; and its claimer (a background worker)
 *   mark.c        the durable mark's policy: when and how far to raise it,
 *                 start-up, shutdown, replay, adoption
 *   watch.c       the clock's health: forward jumps, the time to trust
 *   wal.c         the mark's WAL record
 *   statefile.c   the state file's bytes on disk, the data directory identity
 *   clock.c       the clocks and sleeping
 *   shmem.c       the shared memory itself
 *
 * Locking rules (shared memory):
 *
 * - SnowflakeSlot.word is only ever advanced, by compare-and-swap, and never
 *   under a lock: the hot path takes no lock at all.
 * - SnowflakeShared.reserved (the durable mark, in ticks) only grows while the
 *   server runs.  It is raised only by the holder of SnowflakeShared->lock in
 *   exclusive mode, after the state file that records the new value has been
 *   fsynced and durably renamed, and, with synchronous_standby_names set,
 *   after the synchronous standbys have flushed the MARK record that carries
 *   it (unconfirmed).  Readers load it without a lock.  It goes down once:
 *   when the writer takes in a new synchronous_standby_names, to the mark
 *   loaded at start-up (no new ID), while a new record of the mark waits for
 *   the standbys named now (sf_mark_sync_check).  The mark the file holds never goes down.
 * - Only writers of the state file take the lock: the reservation writer
 *   (marks, adoption, clock holds, the timeline), the startup process
 *   replaying a mark, and a caller only when no writer runs (without waiting
 *   for the lock).  Callers that need a higher mark wait
 *   on mark_cv, which is broadcast after every write attempt: cancellable,
 *   bounded by snowflake.max_wait_ms, never in LWLockAcquire.
 * - worker_latch is set and cleared by the worker itself; anyone may read it
 *   without a lock and set the latch (a stale pointer costs a spurious wake-up
 *   of another process, nothing more).
 * - The state fields (status, message, floor, self) are set at shared memory
 *   start-up, in the postmaster, before any backend exists, and are read-only
 *   afterwards.  owner, copied and file_tli change only under the lock
 *   (adoption, writes) or at start-up; copied and file_tli are read without
 *   it.  adopt_wanted (SF_ADOPT_*) is set to WANTED by a caller that waits
 *   for an adoption, and by compare-and-swap only: the writer takes it
 *   (WANTED -> WRITING) under the lock before writing, a caller that stops
 *   waiting withdraws it (WANTED -> NONE); the writer sets NONE after the
 *   write.  So an adoption nobody waits for any more is never written.
 * - fail_until_ns: while a failure episode of the writer lasts, the monotonic
 *   time of its next scheduled attempt; callers before it get the last
 *   failure's error at once and do not wake the writer (0: no episode).
 * - Counters and the writer's timings are atomics, updated without a lock.
 * - The clock watch (clock_base, clock_armed, clock_ok_until, clock_held,
 *   clock_max_jump) and the episode
 *   flags of a slot (rolling_back, refusal_streak) are atomics: an episode's
 *   WARNING is written by the one process whose compare-and-swap starts or
 *   ends it, never under a lock.
 * - Nothing may ereport, allocate or sleep while holding the lock: the file
 *   code returns an error description, which is reported after release.
 */
#ifndef SNOWFLAKE_H
#define SNOWFLAKE_H

#include <netdb.h>
#include <time.h>

#include "access/xlogdefs.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
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
extern char *sf_registry_role;
extern int	sf_registry_lease_ms;
extern int	sf_max_clock_jump_ms;

#define SF_NODE_UNSET		(-1)
#define SF_NS_PER_MS		INT64CONST(1000000)
#define SF_MAX_LEAD_LIMIT	3600000		/* 1 hour */
#define SF_MAX_N			10000000	/* snowflake_next_n's bound */
#define SF_SYNC_NAMES_LEN	256		/* synchronous_standby_names kept for the log */
#define SF_SYNC_LOOK_MS		100		/* the writer's longest sleep with synchronous standbys named */
#define SF_SYNC_STALE_MS	20		/* a session looks itself when the last look is older */
#define SF_MAX_CLOCK_JUMP_DEFAULT	60000	/* snowflake.max_clock_jump_ms, 1 minute */
#define SF_REFUSAL_STREAK	10			/* consecutive refusals that make an alert */

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
	pg_atomic_uint64 claim_bound;	/* no ID past this Unix ms under the claim */
	pg_atomic_uint32 used;		/* issued an ID since start-up */
	pg_atomic_uint32 record_wanted;	/* a call waits for snowflake.nodes to record this node */
	pg_atomic_uint32 retired;	/* SF_RETIRED_*: never issue here (set at start-up and adoption) */
	pg_atomic_uint32 rolling_back;	/* 1 while the clock is behind clock_high */
	pg_atomic_uint32 refusal_streak;	/* refusals since the last ID issued */
} SnowflakeSlot;

typedef union SnowflakeSlotPadded
{
	SnowflakeSlot slot;
	char		pad[2 * PG_CACHE_LINE_SIZE];
} SnowflakeSlotPadded;

/* SnowflakeSlot.retired */
#define SF_RETIRED_NO		0
#define SF_RETIRED_YES		1	/* in snowflake.nodes' retired set */
#define SF_RETIRED_UNKNOWN	2	/* snowflake.nodes is damaged or unreadable: no node is known not to be */
#define SF_RETIRED_UNRECORDED 3	/* not retired, and not in snowflake.nodes' used set yet: the node's first ID
								 * waits until the writer has recorded it there (durably) */

/* A set of nodes, one bit each (node n: word n / 64, bit n % 64). */
#define SF_NODE_SET_WORDS		(SF_NODE_COUNT / 64)
#define SF_NODE_BIT(set, n)	(((set)[(n) / 64] >> ((n) % 64)) & 1)

typedef enum SnowflakeStateStatus
{
	SF_STATE_OK,				/* file loaded, or none yet (new cluster) */
	SF_STATE_DAMAGED,			/* unusable: generation refuses */
	SF_STATE_UNREADABLE			/* could not be read: generation refuses */
} SnowflakeStateStatus;

/* Which data directory owns the node state (statefile.c). */
typedef struct SnowflakeIdentity
{
	uint64		ino;
	uint64		dev;			/* shown, never compared */
	bool		has_btime;
	int64		btime_sec;
	uint32		btime_nsec;
} SnowflakeIdentity;

typedef struct SnowflakeShared
{
	LWLock	   *lock;			/* serialises writes of the state file */
	SnowflakeStateStatus status;
	char		message[1024];	/* why the state is damaged */
	uint64		floor;			/* tick of the mark loaded at start-up */
	uint64		clock_seen;		/* wall clock (Unix ms) the file was written at */
	SnowflakeIdentity owner;	/* the data directory that owns the node state */
	SnowflakeIdentity self;		/* this one */
	volatile bool copied;		/* owner differs: generation waits for adoption */
	pg_atomic_uint32 adoptions;	/* adoptions begun: sessions older than the last one re-check (round 7) */
	uint32		file_tli;		/* timeline the state file records (under lock); 0: unknown */
	char		pad1[PG_CACHE_LINE_SIZE];
	pg_atomic_uint64 reserved;	/* durable mark: no ID beyond this tick */
	char		pad2[PG_CACHE_LINE_SIZE];
	/* The writer of the mark: written on raises only, off the hot path. */
	ConditionVariable mark_cv;	/* broadcast after every write attempt */
	pg_atomic_uint64 demand;	/* highest tick a waiting caller needs */
	pg_atomic_uint64 write_started;	/* monotonic ns a write began; 0: none */
	/*
	 * A mark the state file holds and WAL carries, not yet confirmed by the
	 * synchronous standbys (round 16): reserved is raised to it only once
	 * they have flushed its MARK record, which ends at unconfirmed_lsn.  Set
	 * under the lock; unconfirmed <= reserved when nothing waits.
	 */
	pg_atomic_uint64 unconfirmed;
	XLogRecPtr	unconfirmed_lsn;	/* under the lock */
	pg_atomic_uint64 confirm_started;	/* monotonic ns the file held it; 0: none waits */
	/*
	 * synchronous_standby_names as reserved was confirmed under (round 19:
	 * a writer that started after the setting changed, or a caller writing
	 * with no writer running, must see the change too).  Its hash, read
	 * without the lock by the writer's look; its text, cut to fit, for the
	 * log.  Written under the lock; set at start-up.
	 */
	pg_atomic_uint32 sync_names_hash;
	char		sync_names[SF_SYNC_NAMES_LEN];
	pg_atomic_uint64 published_lsn;	/* the record of the mark reserved holds (written under the lock) */
	/*
	 * Wall-clock ns the record of the published mark was last found on the
	 * synchronous standbys of then (or generation held for them): by the
	 * writer at its looks, by a session that found it old (round 21: a
	 * writer that did not run let sessions issue a reservation only a dead
	 * standby had).
	 */
	pg_atomic_uint64 sync_checked;
	pg_atomic_uint64 write_slow_ns;	/* recent slowest write, decaying */
	pg_atomic_uint64 writes;	/* write attempts, done */
	pg_atomic_uint64 write_failures;	/* of which failed */
	pg_atomic_uint64 caller_writes;	/* raises done by callers: no writer ran */
	pg_atomic_uint32 adopt_wanted;	/* a caller waits for the writer to write an adoption */
	pg_atomic_uint32 fail_errno;	/* the last failure: errno and step */
	pg_atomic_uint32 fail_step;
	pg_atomic_uint64 fail_until_ns;	/* failure episode: next attempt (monotonic ns); 0: none */
	volatile bool standby_witness;	/* snowflake.standby names this data directory (F1/F2) */
	volatile bool owner_streamed;	/* replayed, streaming, a MARK record of the owner (19b F1) */
	int			owner_streamed_port;	/* the WAL receiver's upstream then (19c F3) */
	char		owner_streamed_host[NI_MAXHOST];
	uint32		owner_streamed_tli;	/* the timeline that record was replayed on (r4 F1) */
	uint32		owner_streamed_node;	/* the owner's server node + 1 it carried; 0: not said (r5 F1) */
	pg_atomic_uint32 server_node;	/* this server's node + 1 from its configuration files (the writer's view); 0: unset */
	/*
	 * The upstream a WAL receiver of this postmaster's life was last seen
	 * connected to: PostgreSQL 19 clears the WAL receiver's own copy whenever
	 * a receiver starts, 15-18 keep it.  Under upstream_mutex.
	 */
	slock_t		upstream_mutex;
	int			upstream_port;
	char		upstream_host[NI_MAXHOST];
	volatile bool import_damaged;	/* the damage is the import file's, not the state file's (round 4) */
	volatile bool import_pending;	/* the imported mark is not in the state file yet (19b F5) */
	uint64		import_mark;	/* that mark (tick), while import_pending */
	void	   *volatile worker_latch;	/* the writer's latch, NULL when none runs */
	/*
	 * snowflake.nodes (issue 19, rounds 7-8): nodes_status and nodes_message
	 * are set at start-up and read-only afterwards; nodes_used and
	 * nodes_retired (what the file holds, or will once written) change only
	 * under the lock.  nodes_dirty: a node issued its first ID since start-up
	 * (set by that backend, taken by the writer).  adopt_by_hand: the
	 * adoption asked for is snowflake_adopt_state()'s (it may retire nodes),
	 * not snowflake.failover_adopt's.
	 */
	SnowflakeStateStatus nodes_status;
	char		nodes_message[512];
	uint64		nodes_used[SF_NODE_SET_WORDS];
	uint64		nodes_retired[SF_NODE_SET_WORDS];
	pg_atomic_uint32 nodes_dirty;
	bool		nodes_logged;	/* the writer logged the sets in WAL since start-up (under the lock) */
	bool		nodes_known;	/* snowflake.nodes was there at start-up, or written since: written again if removed */
	pg_atomic_uint32 adopt_by_hand;
	/* Failed writes of snowflake.nodes by the writer, and the last one's errno and step, for waiting callers. */
	pg_atomic_uint64 nodes_write_failures;
	pg_atomic_uint64 nodes_fail_until_ns;	/* failure episode: the next attempt (monotonic ns); 0: none */
	pg_atomic_uint32 nodes_fail_errno;
	pg_atomic_uint32 nodes_fail_step;
	char		pad3[PG_CACHE_LINE_SIZE];
	/* The clock watch (watch.c): read on the hot path, written on changes. */
	pg_atomic_uint64 clock_ok_until;	/* wall ns (signed) up to which calls need no look */
	pg_atomic_uint64 clock_base;	/* trusted wall - boot clock, ns (signed) */
	pg_atomic_uint64 clock_held;	/* lead (ms) over the trusted time holding generation; 0: none */
	pg_atomic_uint64 clock_max_jump;	/* largest lead over the trusted time seen, ms */
	pg_atomic_uint32 clock_armed;	/* 0: the base still follows the clock up */
	pg_atomic_uint32 clock_held_tol;	/* max_clock_jump_ms when the hold began */
	pg_atomic_uint32 clock_held_recorded;	/* the state file records a hold (under lock) */
	pg_atomic_uint32 clock_unsynced;	/* armed while the kernel said unsynchronized, not synchronized since (W7) */
	pg_atomic_uint32 clock_sync_unrecorded;	/* W7 took a synchronization in: the writer records it */
	bool		has_boot_id;	/* boot_id is known (set at start-up) */
	uint8		boot_id[16];	/* the kernel's boot_id at start-up */
	char		pad4[PG_CACHE_LINE_SIZE];
	SnowflakeSlotPadded slots[SF_NODE_COUNT];

	/*
	 * Sessions that began before the last adoption: the pid of
	 * each process then holding a PGPROC, by its index in the proc array
	 * (round 7).  Written by the adopting backend before the adoption,
	 * read by each backend for itself.
	 */
	int			older_count;
	pg_atomic_uint32 older_pid[FLEXIBLE_ARRAY_MEMBER];
} SnowflakeShared;

/* shmem.c: the shared memory itself */
extern SnowflakeShared *sf_shared;
extern Size sf_shmem_size(void);
extern const char *sf_shmem_tranche(void);
extern bool sf_shmem_init(void);
extern void sf_require_shared(const char *caller);

/* clock.c */
extern uint64 sf_clock_reads;	/* clock reads by this backend (SHOW snowflake.debug_clock_reads) */

/* 2^62 ns in whole seconds (2116-02-20): sf_wall_ns() reads no further. */
#define SF_WALL_LIMIT_SEC	INT64CONST(4611686018)

/*
 * The wall clock, ns since the Unix epoch.  Inline: it is the one clock read
 * of every snowflake_next() (a call into clock.c cost 14 instructions a call,
 * 6% of the call, under callgrind; bench/RESULTS.md).  A clock past 2116 (or
 * before 1824) reads as that instant: far beyond the last Snowflake timestamp
 * (2080) or before the epoch, and far enough from the ends of int64 that the
 * offsets and margins added to it cannot wrap (a wrapped 2263 read as "before
 * the epoch").
 */
static inline int64
sf_wall_ns(void)
{
	struct timespec ts;

	sf_clock_reads++;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (unlikely(ts.tv_sec >= SF_WALL_LIMIT_SEC))
		return SF_WALL_LIMIT_SEC * INT64CONST(1000000000);
	if (unlikely(ts.tv_sec <= -SF_WALL_LIMIT_SEC))
		return -SF_WALL_LIMIT_SEC * INT64CONST(1000000000);
	return (int64) ts.tv_sec * INT64CONST(1000000000) + ts.tv_nsec;
}
extern int64 sf_wall_unix_ms(void);
extern int64 sf_mono_ns(void);
extern int64 sf_boot_ns(void);
extern bool sf_clock_synchronized(void);
extern bool sf_sleep_until(int64 target_wall_ns, int64 deadline_mono_ns);

/* statefile.c: the durable state file */
#define SF_STATE_FILE		"snowflake.state"
#define SF_STATE_TMP_FILE	"snowflake.state.tmp"
/* The standby witness (statefile.c): this data directory streamed as a standby. */
#define SF_WITNESS_FILE		"snowflake.standby"
#define SF_WITNESS_TMP_FILE	"snowflake.standby.tmp"

typedef struct SnowflakeStateImage
{
	uint64		mark;			/* tick: no ID with a later ms was issued */
	int64		wall_unix_ms;	/* wall clock when written */
	SnowflakeIdentity owner;
	bool		clean;			/* written at clean shutdown: mark is the last ms */
	bool		held;			/* generation held for a forward clock jump */
	/* Version 3: the clock watch's trusted offset, for a start on the same boot. */
	bool		clock_armed;	/* clock_base_ns is trusted (the watch armed) */
	int64		clock_base_ns;	/* trusted wall - boot clock, ns */
	bool		clock_unsynced;	/* the watch armed on a clock no time service had synchronized yet (W7) */
	bool		has_boot_id;
	uint8		boot_id[16];	/* the kernel's boot_id when written */
	uint32		timeline;		/* this data directory's timeline when written; 0: unknown */
} SnowflakeStateImage;

#define SF_BOOT_ID_LEN		16

typedef enum SnowflakeReadStatus
{
	SF_READ_OK,
	SF_READ_MISSING,
	SF_READ_UNREADABLE,			/* there, but could not be read: contents unknown */
	SF_READ_DAMAGED
} SnowflakeReadStatus;

typedef enum SnowflakeWriteStep
{
	SF_STEP_NONE,
	SF_STEP_CREATE,
	SF_STEP_WRITE,
	SF_STEP_FSYNC,
	SF_STEP_CLOSE,
	SF_STEP_RENAME,
	SF_STEP_OPEN_DIR,
	SF_STEP_FSYNC_DIR
} SnowflakeWriteStep;

/* Or-ed into a step: the failed write was snowflake.nodes's. */
#define SF_STEP_NODES_FILE	0x100

typedef struct SnowflakeStateResult
{
	bool		ok;
	int			save_errno;
	SnowflakeWriteStep step;	/* what failed */
} SnowflakeStateResult;

#define SF_STATE_IMPORT_FILE	"snowflake.state.import"
#define SF_STATE_IMPORTED_FILE	"snowflake.state.imported"

/* snowflake.nodes: the nodes this node state issued IDs under, and those it must never issue */
#define SF_NODES_FILE		"snowflake.nodes"
#define SF_NODES_TMP_FILE	"snowflake.nodes.tmp"
#define SF_NODES_IMPORT_FILE	"snowflake.nodes.import"
#define SF_NODES_IMPORTED_FILE	"snowflake.nodes.imported"

typedef struct SnowflakeNodesImage
{
	uint64		used[SF_NODE_SET_WORDS];
	uint64		retired[SF_NODE_SET_WORDS];
} SnowflakeNodesImage;

extern SnowflakeReadStatus sf_nodes_read(SnowflakeNodesImage *img, char *why, size_t whylen);
extern SnowflakeReadStatus sf_nodes_read_path(const char *path, bool any_system, SnowflakeNodesImage *img,
											  char *why, size_t whylen);
extern SnowflakeStateResult sf_nodes_write(const SnowflakeNodesImage *img);
extern SnowflakeReadStatus sf_statefile_read(SnowflakeStateImage *img, char *why, size_t whylen);
extern SnowflakeReadStatus sf_statefile_read_path(const char *path, bool any_system,
												  SnowflakeStateImage *img, char *why, size_t whylen);
extern SnowflakeStateResult sf_statefile_write(const SnowflakeStateImage *img);
extern void sf_write_step_text(SnowflakeWriteStep step, const char **action, const char **path);
extern bool sf_datadir_identity(SnowflakeIdentity *id);
extern bool sf_identity_same(const SnowflakeIdentity *a, const SnowflakeIdentity *b);
extern bool sf_witness_names_self(const SnowflakeIdentity *self);
extern bool sf_witness_write(const SnowflakeIdentity *self);
extern char *sf_identity_text(const SnowflakeIdentity *id);

/* wal.c: the mark in WAL, for standbys and crash recovery */
typedef void (*sf_replay_fn) (uint64 mark_tick, const SnowflakeIdentity *writer, uint32 writer_node);
typedef void (*sf_nodes_replay_fn) (const SnowflakeNodesImage *img);
extern void sf_wal_register(sf_replay_fn replay, sf_nodes_replay_fn nodes_replay);
/* guard.c */
extern void sf_guard_init(void);
extern void *sf_guard_before(void);
extern void sf_guard_after(void *before, const char *caller);

extern XLogRecPtr sf_wal_log_mark(uint64 mark_tick, const SnowflakeIdentity *writer);
extern void sf_wal_log_nodes(const SnowflakeNodesImage *img);

/* mark.c: the durable mark's policy */

/*
 * The least a call gives the reservation writer to raise the mark, whatever
 * snowflake.max_wait_ms says: a healthy write takes a few ms, and a first call
 * after an idle stretch always needs one, so max_wait_ms = 0 (never wait for
 * the clock) must not refuse it.  A stalled write is still refused after it.
 */
#define SF_MARK_GRACE_MS	200

/* adopt_wanted */
#define SF_ADOPT_NONE		0
#define SF_ADOPT_WANTED		1
#define SF_ADOPT_WRITING	2

extern void sf_mark_startup(SnowflakeShared *shared);
extern void sf_mark_shutdown(SnowflakeShared *shared);
extern bool sf_mark_await(int64 need_tick, int64 deadline_ns, SnowflakeSlot *slot, int node);
pg_noreturn extern void sf_mark_refuse(const char *caller);
/* registry.c: lift a node's word and the durable mark above carried_ms (Unix ms) */
extern void sf_lift_node(SnowflakeSlot *slot, int64 carried_ms, const char *caller);
extern void sf_mark_nudge(int64 last_tick, int64 now_tick);
extern long sf_mark_writer_step(bool woken);
extern void sf_mark_replayed(uint64 mark_tick, const SnowflakeIdentity *writer, uint32 writer_node);
/* wal.c: the start of the record being replayed */
extern XLogRecPtr sf_wal_replay_lsn;
extern void sf_state_adopt(bool by_hand);
extern void sf_mark_note_used(void);
extern void sf_nodes_await(int node, const char *caller);
/* generator.c: count a refused call of a node */
extern void sf_count_refusal(SnowflakeSlot *slot, int node, const char *why);
extern void sf_nodes_replayed(const SnowflakeNodesImage *img);
pg_noreturn extern void sf_nodes_refuse(const char *caller);
extern void sf_check_session_node(const char *caller);
extern void sf_mark_older_sessions(void);
extern bool sf_mark_promoted(void);
extern const char *sf_mark_recovery_target(void);
extern bool sf_mark_adopt_node_ok(int *mine, int *theirs);
extern void sf_mark_publish_node(void);
extern void sf_mark_sync_startup(SnowflakeShared *shared);
extern void sf_mark_sync_check(void);
extern TimestampTz sf_sync_seen_reload;
extern bool sf_sync_named;
extern bool sf_mark_sync_recheck(void);
extern bool sf_mark_sync_look(int64 now_ns);
extern bool sf_mark_sync_await(int64 deadline);

/*
 * Generation path, now_ns the wall clock it read: whether the reservation was
 * confirmed under the synchronous_standby_names this session has (one
 * comparison until the session takes in a reload; round 19, F1), and, with
 * standbys named, was found on the synchronous standbys of now within
 * SF_SYNC_STALE_MS (one atomic read; round 21).  A clock that went back since
 * the last look makes the difference negative, so huge here: a look too.
 */
static inline bool
sf_mark_sync_current(int64 now_ns)
{
	if (unlikely(PgReloadTime != sf_sync_seen_reload) && !sf_mark_sync_recheck())
		return false;
	if (likely(!sf_sync_named))
		return true;
	return likely((uint64) (now_ns - (int64) pg_atomic_read_u64(&sf_shared->sync_checked)) <
				  (uint64) SF_SYNC_STALE_MS * SF_NS_PER_MS) ||
		sf_mark_sync_look(now_ns);
}
extern void sf_mark_observe_upstream(void);
extern int64 sf_mark_margin_ms(void);

/* watch.c: the clock's health */
typedef enum SnowflakeWatchEvent
{
	SF_WATCH_SAME,				/* nothing changed */
	SF_WATCH_HELD,				/* this look began a hold */
	SF_WATCH_RELEASED			/* this look ended one: the clock came back */
} SnowflakeWatchEvent;

extern SnowflakeWatchEvent sf_watch_look(int64 wall_ns, int64 *held_ms, bool generating);
extern void sf_watch_image(SnowflakeStateImage *img);
extern int64 sf_watch_trusted_ms(void);
extern int64 sf_watch_accept(void);
extern bool sf_watch_sync(void);
extern void sf_watch_startup(SnowflakeShared *shared, bool found, const SnowflakeStateImage *img);

/*
 * The generator's look: a wall clock reading at or below clock_ok_until (a
 * time a look found trusted) needs nothing more; otherwise a full look.
 */
static inline SnowflakeWatchEvent
sf_watch_check(int64 wall_ns, int64 *held_ms)
{
	if (likely(wall_ns <= (int64) pg_atomic_read_u64(&sf_shared->clock_ok_until)))
	{
		*held_ms = 0;
		return SF_WATCH_SAME;
	}
	return sf_watch_look(wall_ns, held_ms, true);
}

/* mark.c, for the watch's episodes: record a hold (or its end) in the state file */
extern void sf_mark_record_hold(bool wait);

/* generator.c */
extern bool sf_quiet_error;		/* the next ERROR stays out of the server log */
extern uint64 sf_reserve(int node, int64 count, const char *caller);
extern int	sf_current_node(const char *caller);

/* worker.c: the reservation writer, which keeps the durable mark ahead */
/* migrate.c */
extern void sf_migrate_refuse_old_caller(FunctionCallInfo fcinfo);
extern void sf_migrate_init(void);

extern void sf_worker_register(void);
extern void sf_bgworker_register(const char *name, const char *function, int flags,
								 BgWorkerStartTime start, int restart_s);

/* registry.c: this server's claim on its node, and the worker that renews it */
extern bool sf_registry_check_hook(char **newval, void **extra, GucSource source);
extern void sf_registry_tokens_init(void);

/* type.c */
extern void sf_type_init(void);
pg_noreturn extern void sf_claim_refuse(SnowflakeSlot *slot, int node, int64 now_ms, int64 last_tick,
							const char *caller);

/*
 * With snowflake.require_claim: refuse an ID whose run ends at last_tick,
 * taken at now_ms (the clock read of this round of the generator's loop),
 * unless the node's lease is current and the run stays within its bound.
 * The caller read the word before: the barrier orders that read before the
 * bound's, which a release relies on (see snowflake_note_release()).
 */
static inline void
sf_claim_check(SnowflakeSlot *slot, int node, int64 now_ms, int64 last_tick, const char *caller)
{
	pg_read_barrier();
	if (unlikely((int64) pg_atomic_read_u64(&slot->claim_until) <= now_ms ||
				 last_tick + SF_EPOCH_UNIX_MS > (int64) pg_atomic_read_u64(&slot->claim_bound)))
		sf_claim_refuse(slot, node, now_ms, last_tick, caller);
}

#endif							/* SNOWFLAKE_H */
