/*
 * fake_identity.c: an LD_PRELOAD shim for 120_identity.pl that changes what
 * stat() and statx() say about the data directory ("."), as a remount, a
 * reboot or a copy would: SF_FAKE_DEV_MINOR sets the device's minor number,
 * SF_FAKE_BTIME the birth time (seconds; SF_FAKE_BTIME_NSEC its nanoseconds),
 * SF_FAKE_NO_BTIME=1 hides it, SF_FAKE_INO sets the inode: a file-level copy
 * then looks like a block-level clone of the original (220_registry_clone.pl).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static void
fake_statx(const char *path, struct statx *buf)
{
	const char *v;

	if (path == NULL || strcmp(path, ".") != 0)
		return;
	if ((v = getenv("SF_FAKE_DEV_MINOR")) != NULL)
		buf->stx_dev_minor = (unsigned) atoi(v);
	if ((v = getenv("SF_FAKE_BTIME")) != NULL)
	{
		buf->stx_btime.tv_sec = atoll(v);
		buf->stx_btime.tv_nsec = (v = getenv("SF_FAKE_BTIME_NSEC")) != NULL ? (unsigned) atol(v) : 0;
		buf->stx_mask |= STATX_BTIME;
	}
	if ((v = getenv("SF_FAKE_INO")) != NULL)
		buf->stx_ino = strtoull(v, NULL, 10);
	if (getenv("SF_FAKE_NO_BTIME") != NULL)
		buf->stx_mask &= ~STATX_BTIME;
}

int
statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
	static int (*real) (int, const char *, int, unsigned int, struct statx *);
	int			r;

	if (real == NULL)
		real = dlsym(RTLD_NEXT, "statx");
	r = real(dirfd, path, flags, mask, buf);
	if (r == 0)
		fake_statx(path, buf);
	return r;
}

int
stat(const char *path, struct stat *buf)
{
	static int (*real) (const char *, struct stat *);
	int			r;
	const char *v;

	if (real == NULL)
		real = dlsym(RTLD_NEXT, "stat");
	r = real(path, buf);
	if (r == 0 && path != NULL && strcmp(path, ".") == 0 &&
		(v = getenv("SF_FAKE_DEV_MINOR")) != NULL)
		buf->st_dev = makedev(major(buf->st_dev), (unsigned) atoi(v));
	return r;
}
