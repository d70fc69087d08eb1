/*
 * clockshim.c: an LD_PRELOAD shim that moves the wall clock of every process
 * it is loaded into, the postmaster included, for the clock tests
 * (SnowflakeTest.pm, clock => 'shim').
 *
 * SF_CLOCK_SHIM_FILE names a file of one line, "M VALUE VALUE\n", where M is
 * O (offset: the wall clock is the real one plus VALUE ms) or F (frozen: the
 * wall clock reads VALUE, Unix ms).  VALUE is written twice, and a read whose
 * two copies differ (a write under way) is read again.  The file is mapped
 * once per process and read on every call, so a change reaches every process
 * at its next clock read, without a system call.  A missing file means the
 * real clock.  Only the wall clock moves (CLOCK_REALTIME, _COARSE,
 * gettimeofday, time); CLOCK_MONOTONIC and CLOCK_BOOTTIME stay real, like an
 * NTP step.
 *
 * SF_CLOCK_SHIM_BOOT_ID, when set, names a file read instead of
 * /proc/sys/kernel/random/boot_id: a test can make a start look like the
 * first after a reboot.
 *
 * SF_CLOCK_SHIM_SYNC, when set, names a file whose first byte says what
 * adjtimex() reports of the kernel's synchronization: 's' synchronized (no
 * STA_UNSYNC, TIME_OK), 'u' unsynchronized (STA_UNSYNC, TIME_ERROR); a
 * missing file means the kernel's own answer.  adjtimex() with modes set is
 * refused (EPERM): nothing here sets the clock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#define SHIM_LEN 64
#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

static const volatile char *shim_map;
static int	shim_tried;
static int	(*real_clock_gettime) (clockid_t, struct timespec *);

static int
real_open_file(const char *path, int flags, mode_t mode)
{
	static int	(*fn) (const char *, int,...);

	if (fn == NULL)
		fn = dlsym(RTLD_NEXT, "open");
	return fn(path, flags, mode);
}

static void
shim_init(void)
{
	const char *path;
	int			fd;
	void	   *p;

	if (shim_tried)
		return;
	real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
	shim_tried = 1;
	path = getenv("SF_CLOCK_SHIM_FILE");
	if (path == NULL)
		return;
	fd = real_open_file(path, O_RDONLY, 0);
	if (fd < 0)
		return;
	p = mmap(NULL, SHIM_LEN, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		shim_map = p;
}

/* Parse a signed decimal at *pos; advance past it. */
static int
shim_number(const char *buf, int *pos, long long *out)
{
	int			i = *pos;
	int			neg = 0;
	int			digits = 0;
	long long	v = 0;

	while (i < SHIM_LEN && buf[i] == ' ')
		i++;
	if (i < SHIM_LEN && (buf[i] == '+' || buf[i] == '-'))
		neg = buf[i++] == '-';
	while (i < SHIM_LEN && buf[i] >= '0' && buf[i] <= '9')
	{
		v = v * 10 + (buf[i++] - '0');
		digits++;
	}
	*pos = i;
	*out = neg ? -v : v;
	return digits > 0;
}

/* The file's mode ('O', 'F') and value; mode 0 when there is none. */
static char
shim_read(long long *value)
{
	shim_init();
	if (shim_map == NULL)
		return 0;
	for (int tries = 0; tries < 1000; tries++)
	{
		char		buf[SHIM_LEN];
		long long	a,
					b;
		int			pos = 1;

		for (int i = 0; i < SHIM_LEN; i++)
			buf[i] = shim_map[i];
		if ((buf[0] != 'O' && buf[0] != 'F') ||
			!shim_number(buf, &pos, &a) || !shim_number(buf, &pos, &b) || a != b)
			continue;
		*value = a;
		return buf[0];
	}
	return 0;
}

/* Move a real wall clock reading by the file's offset, or freeze it. */
static void
shim_adjust(struct timespec *ts)
{
	long long	v;
	char		mode = shim_read(&v);
	long long	ns;

	if (mode == 'O')
	{
		ns = (long long) ts->tv_nsec + (v % 1000) * 1000000LL;
		ts->tv_sec += v / 1000;
	}
	else if (mode == 'F')
	{
		ts->tv_sec = v / 1000;
		ns = (v % 1000) * 1000000LL;
	}
	else
		return;
	while (ns < 0)
	{
		ns += 1000000000LL;
		ts->tv_sec--;
	}
	while (ns >= 1000000000LL)
	{
		ns -= 1000000000LL;
		ts->tv_sec++;
	}
	ts->tv_nsec = (long) ns;
}

int
clock_gettime(clockid_t clk, struct timespec *ts)
{
	int			r;

	shim_init();
	r = real_clock_gettime(clk, ts);
	if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
		shim_adjust(ts);
	return r;
}

int
gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;

	(void) tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t
time(time_t *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

/* The kernel's boot id, or the file SF_CLOCK_SHIM_BOOT_ID names. */
static const char *
shim_path(const char *path)
{
	const char *boot = getenv("SF_CLOCK_SHIM_BOOT_ID");

	if (boot != NULL && path != NULL && strcmp(path, BOOT_ID_PATH) == 0)
		return boot;
	return path;
}

int
open(const char *path, int flags,...)
{
	mode_t		mode = 0;

	if (flags & (O_CREAT | O_TMPFILE))
	{
		va_list		ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return real_open_file(shim_path(path), flags, mode);
}

int
open64(const char *path, int flags,...)
{
	mode_t		mode = 0;

	if (flags & (O_CREAT | O_TMPFILE))
	{
		va_list		ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return real_open_file(shim_path(path), flags, mode);
}

/* The kernel's synchronization as SF_CLOCK_SHIM_SYNC says: 's', 'u', or 0 (the kernel's). */
static char
shim_sync(void)
{
	const char *path = getenv("SF_CLOCK_SHIM_SYNC");
	char		c = 0;
	int			fd;

	if (path == NULL)
		return 0;
	fd = real_open_file(path, O_RDONLY, 0);
	if (fd < 0)
		return 0;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == 's' || c == 'u' ? c : 0;
}

int
adjtimex(struct timex *tx)
{
	static int	(*real_adjtimex) (struct timex *);
	char		sync = shim_sync();
	int			r;

	if (real_adjtimex == NULL)
		real_adjtimex = dlsym(RTLD_NEXT, "adjtimex");
	if (sync != 0 && tx->modes != 0)
	{
		errno = EPERM;
		return -1;
	}
	r = real_adjtimex(tx);
	if (r == -1 || sync == 0)
		return r;
	if (sync == 's')
	{
		tx->status &= ~STA_UNSYNC;
		return TIME_OK;
	}
	tx->status |= STA_UNSYNC;
	return TIME_ERROR;
}

int
ntp_adjtime(struct timex *tx)
{
	return adjtimex(tx);
}
