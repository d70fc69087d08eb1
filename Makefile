# Makefile: PGXS build of the snowflake extension, and its pg_regress and isolation tests.

EXTENSION = snowflake
EXTVERSION = $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" $(EXTENSION).control)

MODULE_big = snowflake
OBJS = \
	src/snowflake.o \
	src/shmem.o \
	src/clock.o \
	src/watch.o \
	src/statefile.o \
	src/mark.o \
	src/generator.o \
	src/worker.o \
	src/wal.o \
	src/registry.o \
	src/type.o \
	src/functions.o \
	src/migrate.o \
	src/guard.o

DATA = $(wildcard sql/$(EXTENSION)--*.sql)

# pg_regress and isolation tests start their own server with the library preloaded.
REGRESS = $(basename $(notdir $(sort $(wildcard test/sql/*.sql))))
REGRESS_OPTS = --inputdir=test --temp-config=test/snowflake.conf --temp-instance=tmp_check
ISOLATION = $(basename $(notdir $(sort $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test --temp-config=test/snowflake.conf --temp-instance=tmp_check_iso

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers
# The module's version (PostgreSQL 18 shows it in pg_get_loaded_modules()) is the control file's.
PG_CPPFLAGS = -DSNOWFLAKE_VERSION='"$(EXTVERSION)"'

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS does not track headers: every object depends on all of ours.
$(OBJS): $(wildcard src/*.h)

EXTRA_CLEAN = tmp_check tmp_check_iso output_iso results regression.diffs regression.out

# One suite at a time (run-tests calls these).
.PHONY: installcheck-regress-only installcheck-isolation-only installcheck-tap-only
installcheck-regress-only:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
installcheck-isolation-only:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
installcheck-tap-only:
	$(prove_installcheck)

# The archive PGXN takes: the committed tree (HEAD) under snowflake-VERSION/, with META.json at its
# top (git archive, as pgvector does; .gitattributes leaves out what users do not need).
DISTDIR ?= dist
.PHONY: dist
dist:
	mkdir -p $(DISTDIR)
	git archive --format zip --prefix=$(EXTENSION)-$(EXTVERSION)/ \
		--output $(DISTDIR)/$(EXTENSION)-$(EXTVERSION).zip HEAD
