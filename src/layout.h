/*
 * layout.h: the bit layout of a Snowflake ID, in one place.
 *
 * A Snowflake ID is a positive int64: 41 bits of ms since the Twitter epoch,
 * 5 bits of datacenter id, 5 bits of machine id, 12 bits of sequence.  Every
 * shift, mask, limit and the epoch live here as named constants; no other file
 * may spell them out.  Nothing here allocates, reports or touches shared state.
 */
#ifndef SNOWFLAKE_LAYOUT_H
#define SNOWFLAKE_LAYOUT_H

#include "datatype/timestamp.h"

#define SF_TIMESTAMP_BITS	41
#define SF_DATACENTER_BITS	5
#define SF_MACHINE_BITS		5
#define SF_SEQUENCE_BITS	12

#define SF_SEQUENCE_SHIFT	0
#define SF_MACHINE_SHIFT	(SF_SEQUENCE_SHIFT + SF_SEQUENCE_BITS)		/* 12 */
#define SF_DATACENTER_SHIFT (SF_MACHINE_SHIFT + SF_MACHINE_BITS)		/* 17 */
#define SF_TIMESTAMP_SHIFT	(SF_DATACENTER_SHIFT + SF_DATACENTER_BITS)	/* 22 */

#define SF_MAX_SEQUENCE		((INT64CONST(1) << SF_SEQUENCE_BITS) - 1)	/* 4095 */
#define SF_MAX_DATACENTER	((INT64CONST(1) << SF_DATACENTER_BITS) - 1) /* 31 */
#define SF_MAX_MACHINE		((INT64CONST(1) << SF_MACHINE_BITS) - 1)	/* 31 */
#define SF_MAX_TICK			((INT64CONST(1) << SF_TIMESTAMP_BITS) - 1) /* ms since epoch */

#define SF_NODE_COUNT		((SF_MAX_DATACENTER + 1) * (SF_MAX_MACHINE + 1))	/* 1024 */

/* A node's index, 0 .. SF_NODE_COUNT - 1 (datacenter * 32 + machine), and back. */
#define SF_NODE_INDEX(dc, mc)	((dc) * (int) (SF_MAX_MACHINE + 1) + (mc))
#define SF_NODE_DC(node)	((node) / (int) (SF_MAX_MACHINE + 1))
#define SF_NODE_MC(node)	((node) % (int) (SF_MAX_MACHINE + 1))

/* The Twitter epoch, 2010-11-04 01:42:54.657 UTC, in Unix ms. */
#define SF_EPOCH_UNIX_MS	INT64CONST(1288834974657)
#define SF_MAX_UNIX_MS		(SF_EPOCH_UNIX_MS + SF_MAX_TICK)	/* 2080-07-10 17:30:30.208 UTC */

/* PostgreSQL timestamps count microseconds from 2000-01-01 00:00:00 UTC. */
#define SF_PG_EPOCH_UNIX_MS \
	(INT64CONST(1000) * SECS_PER_DAY * (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE))

#define SF_MIN_TEXT			"2010-11-04 01:42:54.657+00"
#define SF_MAX_TEXT			"2080-07-10 17:30:30.208+00"

/*
 * The generator's per-node word: tick << SF_SEQUENCE_BITS | sequence.  Node
 * bits are not in it, so consecutive words are consecutive IDs of one node.
 */
#define SF_WORD(tick, seq)	(((uint64) (tick) << SF_SEQUENCE_BITS) | (uint64) (seq))
#define SF_WORD_TICK(w)		((int64) ((w) >> SF_SEQUENCE_BITS))
#define SF_WORD_SEQ(w)		((int) ((w) & SF_MAX_SEQUENCE))

static inline int64
sf_make_id(int64 tick, int datacenter, int machine, int sequence)
{
	return (tick << SF_TIMESTAMP_SHIFT) |
		((int64) datacenter << SF_DATACENTER_SHIFT) |
		((int64) machine << SF_MACHINE_SHIFT) |
		((int64) sequence << SF_SEQUENCE_SHIFT);
}

/* The ID for a generator word of a node (node = datacenter * 32 + machine). */
static inline int64
sf_word_to_id(uint64 word, int node)
{
	return (SF_WORD_TICK(word) << SF_TIMESTAMP_SHIFT) |
		((int64) node << SF_MACHINE_SHIFT) |
		(int64) SF_WORD_SEQ(word);
}

static inline int64
sf_id_tick(int64 id)
{
	return id >> SF_TIMESTAMP_SHIFT;
}

static inline int
sf_id_datacenter(int64 id)
{
	return (int) ((id >> SF_DATACENTER_SHIFT) & SF_MAX_DATACENTER);
}

static inline int
sf_id_machine(int64 id)
{
	return (int) ((id >> SF_MACHINE_SHIFT) & SF_MAX_MACHINE);
}

static inline int
sf_id_sequence(int64 id)
{
	return (int) ((id >> SF_SEQUENCE_SHIFT) & SF_MAX_SEQUENCE);
}

/* Unix ms to a PostgreSQL timestamptz, exact (both are integers). */
static inline TimestampTz
sf_unix_ms_to_timestamptz(int64 unix_ms)
{
	return (unix_ms - SF_PG_EPOCH_UNIX_MS) * INT64CONST(1000);
}

/* A PostgreSQL timestamptz to Unix ms, floored (also for times before 2000). */
static inline int64
sf_timestamptz_to_unix_ms(TimestampTz ts)
{
	int64		ms = ts / 1000;

	if (ts % 1000 < 0)
		ms--;
	return ms + SF_PG_EPOCH_UNIX_MS;
}

#endif							/* SNOWFLAKE_LAYOUT_H */
