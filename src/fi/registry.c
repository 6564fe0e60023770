// SPDX-License-Identifier: BSD-2-Clause
/*
 * The registry of the droce processes that share one kernel interface.
 *
 * With net_af_packet every process's packet socket sees every frame on
 * the interface, and every process answers for the same MAC and IPv4
 * address.  So the identifiers the wire routes by must be unique across
 * the processes on the host -- QPNs (BTH DestQP), rdma_cm ports (the REQ's
 * service ID, the CMA header's source port) and CM communication IDs (what
 * REP, RTU, REJ, DREQ, DREP and MRA name) -- and each process must know
 * which frames and MADs another process owns, to leave them alone, and
 * which nobody owns, so that exactly one process answers those as a lone
 * kernel CM would (a REJ "invalid service ID" for a REQ nobody listens on,
 * a REJ "stale connection" for a REP, a DREP for a DREQ).
 *
 * Design: one file per interface and network namespace,
 * /run/droce/<ifname>@net<inode of the netns> (/dev/shm/droce/ or
 * $XDG_RUNTIME_DIR/droce/ when /run is not writable), that holds no data
 * at all: every claim is an open-file-description byte-range lock
 * (fcntl F_OFD_SETLK, Linux >= 3.15) on one byte of it, at an offset that
 * encodes what is claimed:
 *
 *	[0, 2^24)		a QPN
 *	2^24 + [0, 2^16)	an rdma_cm port (listening, or the source port
 *				of a connection this process made)
 *	2^24 + 2^16		the CM responder role
 *	2^24 + 2^16 + 1		"in use": every user holds a shared lock
 *	2^24 + 2^16 + 2 + [0, 64)  a slot of the host-local wire (local.c)
 *	2^32 + [0, 2^32)	a CM communication ID
 *
 * The kernel grants a write lock on a byte to one open file description at
 * a time, atomically: two processes can never both claim one QPN, port or
 * comm ID, whatever their timing (the claim is the lock, there is no check
 * then write).  F_OFD_GETLK tells whether another process holds a byte.
 * The kernel drops every lock of a description when its last descriptor
 * closes -- when the process exits, however it dies (kill -9 included) --
 * so nothing a dead process held stays claimed, and there is nothing to
 * clean up or to time out: the next claim of its QPN simply succeeds.
 * Locks beyond the end of a file are allowed; the file stays empty.
 *
 * The CM responder: the one process that answers MADs nobody on the host
 * owns.  Every process tries to take its byte when it opens the registry
 * (the first one gets it) and again whenever it meets such a MAD; while
 * the holder lives nobody else gets it, and when it dies the first process
 * that meets such a MAD takes over.  A process that reads a MAD for
 * nobody after it waited in its receive ring longer than DR_REG_GRACE_NS
 * (the kernel stamps each frame; "packet:IF" ports) leaves it unanswered
 * (src/fi/dev.c cm_whose): its owner, or the responder, may have answered
 * it and died since -- kill -9 lets go of everything at once, without the
 * grace below -- and the sender's CM resends a MAD nobody answered, a copy
 * young enough to answer.  (CI's tests/netns-multiproc.sh once saw a REQ
 * answered by a REP and by a REJ "invalid service ID", under load, around
 * the kill -9 of a listener: this race is the explanation that fits.)  The
 * race left is on ports without receive times (net_af_packet): a second
 * answer, which the peer drops as a duplicate.
 *
 * Releases take effect DR_REG_GRACE_NS late (dr_reg_tick), and a closing
 * process that held anything waits that long before its claims go: every
 * process reads the same frames from its own socket, some milliseconds
 * behind the others when it has not polled for a while, and a MAD its
 * owner answered just before letting go of what it names must not look
 * like a MAD for nobody to a process that reads it later (the responder
 * would answer it a second time, or refuse a REQ its listener accepted).
 *
 * The file goes when its last user closes: a user holds a shared lock on
 * the "in use" byte; closing, it tries to turn that into an exclusive one,
 * which succeeds only when no other process uses the file, and unlinks the
 * file while holding it.  An opener takes its shared lock waiting
 * (F_OFD_SETLKW) and then checks that the path still names the file it
 * opened; if the file was unlinked meanwhile it opens again.  A process
 * killed with -9 leaves the file behind, unlocked; the next last user
 * removes it.
 *
 * Processes on one host reach each other through the host-local wire
 * (local.c): a frame a packet socket sends to the host's own address never
 * comes back from the wire, so frames to the own address are copied into
 * shared-memory rings instead, one per sender and receiver, in a second
 * file that belongs to this one (<ifname>@net<inode>.<n>.wire, in /dev/shm:
 * the rings are written at the packet rate and must not be backed by a
 * disk).  A process's place on the wire is a slot, claimed here like
 * everything else, so it is free again the moment the process dies.  The
 * wire delivers a CM MAD to every process, the sender included, as every
 * packet socket sees every frame: the rules above (foreign QPNs and comm
 * IDs, the responder) apply to the host's own traffic unchanged.  The
 * wire file is opened only through a registry file held open, and the
 * last user unlinks it before the registry file (dr_reg_wire_open).
 *
 * The directory is mode 1777 and the file mode 0666, so that processes of
 * different users (each with CAP_NET_RAW for af_packet) share one
 * registry: any local user can then hold claims and so keep QPNs, ports or
 * the responder role from droce processes on that interface, but cannot
 * read or change anything of theirs.  A forked child shares its parent's
 * descriptor and so its claims (descriptors are close-on-exec).
 */
#define _GNU_SOURCE /* F_OFD_* */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dr_fi.h"

#define REG_OFF_QPN	  0ull
#define REG_OFF_PORT	  (1ull << 24)
#define REG_OFF_RESPONDER (REG_OFF_PORT + 65536)
#define REG_OFF_USERS	  (REG_OFF_RESPONDER + 1)
#define REG_OFF_SLOT	  (REG_OFF_USERS + 1)
#define REG_OFF_COMM_ID	  (1ull << 32)

#define REG_LATER    256

struct dr_reg {
	int fd;
	bool responder; /* this process holds the CM responder role */
	unsigned nlater;
	struct {
		off_t off;
		uint64_t due_ns;
	} later[REG_LATER]; /* released, still held until due, oldest first */
	char path[256];
	char wire_path[300]; /* the host-local wire (local.c) */
};

static off_t reg_off(enum dr_reg_kind kind, uint32_t v)
{
	switch (kind) {
	case DR_REG_QPN:
		return (off_t)(REG_OFF_QPN + (v & 0xffffff));
	case DR_REG_PORT:
		return (off_t)(REG_OFF_PORT + (v & 0xffff));
	default:
		return (off_t)(REG_OFF_COMM_ID + v);
	}
}

static int reg_lock(int fd, short type, off_t off, bool wait)
{
	struct flock fl = {
	    .l_type = type,
	    .l_whence = SEEK_SET,
	    .l_start = off,
	    .l_len = 1,
	};
	int ret;

	do
		ret = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
	while (ret && errno == EINTR);
	if (!ret)
		return 0;
	return errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
}

/* Does another open file description hold a lock on byte off? */
static bool reg_held_elsewhere(int fd, off_t off)
{
	struct flock fl = {
	    .l_type = F_WRLCK,
	    .l_whence = SEEK_SET,
	    .l_start = off,
	    .l_len = 1,
	    .l_pid = 0, /* F_OFD_GETLK wants 0 */
	};

	/* our own locks never conflict with us: F_UNLCK for those */
	if (fcntl(fd, F_OFD_GETLK, &fl))
		return false;
	return fl.l_type != F_UNLCK;
}

/* The directories tried in turn: /run first (where the system keeps such
 * state), then the ones an unprivileged process can write. */
static int reg_dir(char *dir, size_t len, unsigned i)
{
	const char *xdg;

	switch (i) {
	case 0:
		snprintf(dir, len, "/run/droce");
		return 0;
	case 1:
		snprintf(dir, len, "/dev/shm/droce");
		return 0;
	case 2:
		xdg = getenv("XDG_RUNTIME_DIR");
		if (!xdg || xdg[0] != '/')
			return -ENOENT;
		snprintf(dir, len, "%s/droce", xdg);
		return 0;
	default:
		return -ENOENT;
	}
}

/* Open path and take the shared "in use" lock on the file it names; -errno. */
static int reg_open_file(const char *path)
{
	struct stat a, b;
	int fd, ret, tries;

	for (tries = 0; tries < 100; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd < 0)
			return -errno;
		/* whoever created it: readable and lockable by every user
		 * (fails harmlessly on another user's file) */
		(void)fchmod(fd, 0666);
		ret = reg_lock(fd, F_RDLCK, REG_OFF_USERS, true);
		if (ret) {
			close(fd);
			return ret;
		}
		/* a last user may have unlinked it between our open and our
		 * lock: then open the file that replaces it */
		if (!fstat(fd, &a) && a.st_nlink > 0 && !stat(path, &b) && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

/* The wire's file: in /dev/shm, a tmpfs, whatever holds the registry (the
 * rings are written at the packet rate: a disk-backed /run would write
 * them back to disk), else beside the registry.  Named after the registry
 * (its directory: reg_dir's dir_i) so that processes that ended up with
 * two registries for one interface (one could not use /run) never share
 * a wire whose slots neither registry fully knows. */
static void reg_wire_path(struct dr_reg *r, unsigned dir_i, const char *ifname,
			  unsigned long long ns)
{
	const char *dir = "/dev/shm/droce";

	if (!mkdir(dir, 01777))
		(void)chmod(dir, 01777);
	if (!access(dir, W_OK | X_OK))
		snprintf(r->wire_path, sizeof(r->wire_path), "%s/%s@net%llu.%u.wire", dir, ifname,
			 ns, dir_i);
	else
		snprintf(r->wire_path, sizeof(r->wire_path), "%s.wire", r->path);
}

int dr_reg_open(const char *ifname, struct dr_reg **out)
{
	struct dr_reg *r;
	struct stat ns;
	char dir[200];
	int fd = -ENOENT;
	unsigned i;

	*out = NULL;
	if (!ifname || !ifname[0])
		return 0; /* not a kernel interface: no other process shares it */
	if (stat("/proc/self/ns/net", &ns))
		ns.st_ino = 0; /* no /proc: names alone */
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; reg_dir(dir, sizeof(dir), i) == 0; i++) {
		if (!mkdir(dir, 01777))
			(void)chmod(dir, 01777); /* past the umask */
		snprintf(r->path, sizeof(r->path), "%s/%s@net%llu", dir, ifname,
			 (unsigned long long)ns.st_ino);
		fd = reg_open_file(r->path);
		if (fd >= 0)
			break;
		DR_INFO(FI_LOG_DOMAIN, "registry %s: %s\n", r->path, strerror(-fd));
	}
	if (fd < 0) {
		free(r);
		return fd;
	}
	r->fd = fd;
	reg_wire_path(r, i, ifname, (unsigned long long)ns.st_ino);
	dr_reg_responder(r); /* the first process on the interface takes it */
	DR_INFO(FI_LOG_DOMAIN, "%s: registry %s%s\n", ifname, r->path,
		r->responder ? " (CM responder)" : "");
	*out = r;
	return 0;
}

/* Let go of what was released DR_REG_GRACE_NS ago (all of it: now = ~0). */
static void reg_release_due(struct dr_reg *r, uint64_t now)
{
	unsigned n = 0;

	while (n < r->nlater && r->later[n].due_ns <= now)
		reg_lock(r->fd, F_UNLCK, r->later[n++].off, false);
	if (!n)
		return;
	r->nlater -= n;
	memmove(r->later, r->later + n, r->nlater * sizeof(r->later[0]));
}

void dr_reg_tick(struct dr_reg *r)
{
	if (r && r->nlater && r->later[0].due_ns <= dr_port_now_ns())
		reg_release_due(r, dr_port_now_ns());
}

void dr_reg_close(struct dr_reg *r)
{
	uint64_t now, until = 0;

	if (!r)
		return;
	/* the others may still be reading what we last answered */
	now = dr_port_now_ns();
	if (r->nlater)
		until = r->later[r->nlater - 1].due_ns;
	if (r->responder && until < now + DR_REG_GRACE_NS)
		until = now + DR_REG_GRACE_NS;
	if (until > now) {
		struct timespec ts = {(time_t)((until - now) / 1000000000u),
				      (long)((until - now) % 1000000000u)};

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	reg_release_due(r, UINT64_MAX);
	/* the last user: no shared lock but ours, so ours becomes exclusive
	 * and nobody can be half-way into the file while it goes */
	if (!reg_lock(r->fd, F_WRLCK, REG_OFF_USERS, false)) {
		/* the wire first: an opener reaches the wire only through a
		 * registry file it holds, and a new registry file can appear
		 * only once this one is gone (dr_reg_wire_open) */
		unlink(r->wire_path);
		unlink(r->path);
	}
	close(r->fd); /* every claim goes with it */
	free(r);
}

int dr_reg_claim(struct dr_reg *r, enum dr_reg_kind kind, uint32_t v)
{
	off_t off = reg_off(kind, v);

	if (!r)
		return 0;
	/* ours again before its release was due: it stays held */
	for (unsigned i = 0; i < r->nlater; i++)
		if (r->later[i].off == off) {
			r->nlater--;
			memmove(r->later + i, r->later + i + 1,
				(r->nlater - i) * sizeof(r->later[0]));
			return 0;
		}
	return reg_lock(r->fd, F_WRLCK, off, false);
}

void dr_reg_release(struct dr_reg *r, enum dr_reg_kind kind, uint32_t v)
{
	if (!r)
		return;
	if (r->nlater == REG_LATER) /* full: the oldest goes now */
		reg_release_due(r, r->later[0].due_ns);
	r->later[r->nlater].off = reg_off(kind, v);
	r->later[r->nlater++].due_ns = dr_port_now_ns() + DR_REG_GRACE_NS;
}

bool dr_reg_foreign(struct dr_reg *r, enum dr_reg_kind kind, uint32_t v)
{
	return r && reg_held_elsewhere(r->fd, reg_off(kind, v));
}

bool dr_reg_responder(struct dr_reg *r)
{
	if (!r)
		return true; /* alone: it answers everything */
	if (!r->responder && !reg_lock(r->fd, F_WRLCK, REG_OFF_RESPONDER, false)) {
		r->responder = true;
		DR_INFO(FI_LOG_DOMAIN, "%s: this process now answers CM MADs nobody owns\n",
			r->path);
	}
	return r->responder;
}

bool dr_reg_is_responder(const struct dr_reg *r)
{
	return !r || r->responder;
}

const char *dr_reg_path(const struct dr_reg *r)
{
	return r ? r->path : NULL;
}

int dr_reg_slot_claim(struct dr_reg *r, unsigned nslots, unsigned *slot)
{
	unsigned i;
	int ret;

	for (i = 0; i < nslots; i++) {
		ret = reg_lock(r->fd, F_WRLCK, (off_t)(REG_OFF_SLOT + i), false);
		if (!ret) {
			*slot = i;
			return 0;
		}
		if (ret != -EBUSY)
			return ret;
	}
	return -EBUSY;
}

bool dr_reg_slot_live(struct dr_reg *r, unsigned slot)
{
	return reg_held_elsewhere(r->fd, (off_t)(REG_OFF_SLOT + slot));
}

/*
 * The host-local wire's file (local.c), owned by the registry file: it is
 * opened only by a process that holds the registry file (its shared "in
 * use" lock) and removed by the last user, before the registry file.  A
 * process can hold a new registry file only once the old one is unlinked,
 * hence after the old wire is, so it never meets a wire of an older
 * registry that others still use.  Mode 0600: the wire carries the data
 * itself, which only its creator's user may read; a process of another
 * user runs without it (local.c).
 */
int dr_reg_wire_open(struct dr_reg *r)
{
	int fd = open(r->wire_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	return fd < 0 ? -errno : fd;
}

const char *dr_reg_wire_path(const struct dr_reg *r)
{
	return r->wire_path;
}
