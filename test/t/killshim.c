/*
 * killshim.c: an LD_PRELOAD shim that kills the process right after a
 * rename() it is told of succeeds, to crash a writer between a file's write
 * and what comes after it (484_nodes_relog.pl).
 *
 * SF_KILL_SHIM_RENAME names the source of the rename (as the caller gives it,
 * for example "snowflake.nodes.tmp"); SF_KILL_SHIM_TRIGGER names a file.
 * When a rename of that source succeeds while the trigger file exists, the
 * shim removes the trigger (so it fires once) and sends SIGKILL to its own
 * process.  Every other rename is the real one, untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
rename(const char *oldpath, const char *newpath)
{
	static int	(*real_rename) (const char *, const char *);
	const char *source = getenv("SF_KILL_SHIM_RENAME");
	const char *trigger = getenv("SF_KILL_SHIM_TRIGGER");
	int			rc;

	if (real_rename == NULL)
		real_rename = dlsym(RTLD_NEXT, "rename");
	rc = real_rename(oldpath, newpath);
	if (rc == 0 && source != NULL && trigger != NULL && strcmp(oldpath, source) == 0 &&
		unlink(trigger) == 0)
		kill(getpid(), SIGKILL);
	return rc;
}
