// SPDX-License-Identifier: BSD-2-Clause
/*
 * Port layer, process-wide part: starting DPDK's EAL on first use, routing
 * DPDK's log into ours, giving threads lcore ids, and error reporting.
 *
 * EAL facts this file is built around (DPDK 22.11, lib/eal/linux/eal.c and
 * eal_common_options.c):
 *  - rte_eal_init() runs once per process; a second call fails with
 *    EALREADY, and after a failure it cannot be retried reliably;
 *  - it returns -1 with rte_errno on bad arguments and resource failures,
 *    but calls exit() for -h/--help (and prints usage on stdout for any
 *    bad option - that we cannot prevent);
 *  - --no-huge silently turns on --legacy-mem, which it then refuses next
 *    to --in-memory ("Option --legacy-mem is not compatible with
 *    --in-memory"): we use --no-huge with --no-shconf and a per-process
 *    --file-prefix instead;
 *  - it pins the calling thread to the main lcore's CPU set (CPU 0 by
 *    default): a library must not do that to its caller's thread, so the
 *    one lcore is mapped onto the thread's current CPU set;
 *  - with no shared config it still creates an (empty) runtime directory
 *    under /var/run/dpdk or $XDG_RUNTIME_DIR/dpdk and removes it only in
 *    rte_eal_cleanup(), which a library cannot call: we remove it;
 *  - telemetry (lib/telemetry/telemetry.c) works with --no-shconf and
 *    --no-huge: it needs only that runtime directory, where it binds
 *    dpdk_telemetry.v2, and one thread blocked in accept() (plus one per
 *    connected client while connected; "telemetry-v1" too when a library
 *    registered legacy callbacks, none of ours does).  It unlinks the
 *    socket from an atexit() handler it registers during rte_eal_init, so
 *    the directory is removed from one registered before it (atexit
 *    handlers run in reverse order), and a failure to bind the socket
 *    fails rte_eal_init;
 *  - its log goes to stdout and syslog unless a stream is set before init.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_pci.h>
#include <rte_timer.h>
#include <rte_version.h>

#include "port_priv.h"

pthread_mutex_t dr_port_global_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- logging ---------------------------------------------------------------- */

static dr_port_log_fn log_fn;
static void *log_ctx;

void dr_port_set_log(dr_port_log_fn fn, void *ctx)
{
	log_ctx = ctx;
	log_fn = fn;
}

static void log_line(enum dr_port_log_level level, const char *msg)
{
	dr_port_log_fn fn = log_fn;

	if (fn)
		fn(log_ctx, level, msg);
	else if (level == DR_PORT_LOG_WARN)
		fprintf(stderr, "droce: %s\n", msg);
}

void dr_port_log(enum dr_port_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line(level, msg);
}

int dr_port_fail(struct dr_port_err *err, int ret, enum dr_port_param param, const char *fmt, ...)
{
	char msg[sizeof(err->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err) {
		err->err = ret;
		err->param = param;
		memcpy(err->msg, msg, sizeof(msg));
	} else {
		log_line(DR_PORT_LOG_WARN, msg);
	}
	return ret;
}

/* DPDK's log stream: each rte_log() call is one vfprintf + fflush on it
 * (lib/eal/common/eal_common_log.c rte_vlog), so one write is one message,
 * and rte_log_cur_msg_loglevel() tells its level on the writing thread.
 * The first error line after dr_port_dpdk_err_clear() is kept: the root
 * cause comes first ("I/F name too long"), generic lines after it ("Failed
 * to attach device on primary process"). */
static pthread_mutex_t dpdk_err_lock = PTHREAD_MUTEX_INITIALIZER;
static char dpdk_err[256];

/* Error lines DPDK logs for things that do not matter to us: shown as
 * information, not as warnings a user would chase. */
static const char *const benign[] = {
    /* net_memif registers a multi-process handler; there is none with
     * --no-shconf (or --in-memory) and the PMD carries on without it */
    "Failed to register mp action callback: Operation not supported",
    /* telemetry: the legacy v1 socket is for libraries with legacy
     * callbacks; none are loaded, the v2 socket serves droce-stat */
    "No legacy callbacks, legacy socket not created",
};

static bool is_benign(const char *line)
{
	for (size_t i = 0; i < sizeof(benign) / sizeof(benign[0]); i++)
		if (strstr(line, benign[i]))
			return true;
	return false;
}

void dr_port_dpdk_err_clear(void)
{
	pthread_mutex_lock(&dpdk_err_lock);
	dpdk_err[0] = 0;
	pthread_mutex_unlock(&dpdk_err_lock);
}

const char *dr_port_dpdk_err(char *buf, size_t len)
{
	pthread_mutex_lock(&dpdk_err_lock);
	snprintf(buf, len, "%s", dpdk_err);
	pthread_mutex_unlock(&dpdk_err_lock);
	return buf;
}

static ssize_t dpdk_log_write(void *cookie, const char *buf, size_t size)
{
	int rte_level = rte_log_cur_msg_loglevel();
	enum dr_port_log_level level;
	char line[512];
	size_t off = 0;

	if (rte_level <= (int)RTE_LOG_WARNING)
		level = DR_PORT_LOG_WARN;
	else if (rte_level <= (int)RTE_LOG_INFO)
		level = DR_PORT_LOG_INFO;
	else
		level = DR_PORT_LOG_DEBUG;

	while (off < size) {
		const char *nl = memchr(buf + off, '\n', size - off);
		size_t n = (nl ? (size_t)(nl - buf) : size) - off;
		size_t c = n < sizeof(line) - 1 ? n : sizeof(line) - 1;

		memcpy(line, buf + off, c);
		line[c] = 0;
		off += n + (nl ? 1 : 0);
		if (!c)
			continue;
		if (is_benign(line)) {
			log_line(DR_PORT_LOG_INFO, line);
			continue;
		}
		if (rte_level <= (int)RTE_LOG_ERR) {
			pthread_mutex_lock(&dpdk_err_lock);
			if (!dpdk_err[0])
				snprintf(dpdk_err, sizeof(dpdk_err), "%.*s",
					 (int)sizeof(dpdk_err) - 1, line);
			pthread_mutex_unlock(&dpdk_err_lock);
		}
		log_line(level, line);
	}
	return size;
}

static FILE *dpdk_log_stream(void)
{
	static const cookie_io_functions_t io = {.write = dpdk_log_write};
	FILE *f = fopencookie(NULL, "w", io);

	if (f)
		setvbuf(f, NULL, _IOFBF, 4096);
	return f;
}

/* ---- argument handling ------------------------------------------------------------- */

#define MAX_ARGS 64

/* Split s in place at blanks; '...' and "..." group (quotes removed). */
static int split_args(char *s, char **tok, int max)
{
	char *r = s, *w = s;
	int n = 0;

	for (;;) {
		char quote = 0;

		while (isspace((unsigned char)*r))
			r++;
		if (!*r)
			return n;
		if (n == max)
			return -E2BIG;
		tok[n++] = w;
		while (*r && (quote || !isspace((unsigned char)*r))) {
			if (!quote && (*r == '\'' || *r == '"'))
				quote = *r++;
			else if (quote && *r == quote)
				quote = 0, r++;
			else
				*w++ = *r++;
		}
		if (quote)
			return -EINVAL;
		if (*r)
			r++;
		*w++ = 0;
	}
}

/* Does the user give long option name (as "--name" or "--name=...")? */
static bool has_long(char **tok, int n, const char *name)
{
	size_t len = strlen(name);

	for (int i = 0; i < n; i++)
		if (!strncmp(tok[i], name, len) && (tok[i][len] == 0 || tok[i][len] == '='))
			return true;
	return false;
}

/* ... or short option c (as "-c" or "-cVALUE")? */
static bool has_short(char **tok, int n, char c)
{
	for (int i = 0; i < n; i++)
		if (tok[i][0] == '-' && tok[i][1] == c)
			return true;
	return false;
}

bool dr_port_spec_is_pci(const char *spec)
{
	char name[64];
	struct rte_pci_addr addr;
	size_t n = strcspn(spec, ",");

	if (n == 0 || n >= sizeof(name))
		return false;
	memcpy(name, spec, n);
	name[n] = 0;
	return rte_pci_addr_parse(name, &addr) == 0;
}

const char *dr_port_packet_iface(const char *spec, char *buf, size_t len)
{
	const char *s = NULL;

	if (!strncmp(spec, "packet:", strlen("packet:")))
		s = spec + strlen("packet:");
	else if (!strncmp(spec, "net_af_packet", strlen("net_af_packet")))
		s = strstr(spec, ",iface=");
	if (s && *s == ',')
		s += strlen(",iface=");
	if (!s || !*s)
		return NULL;
	snprintf(buf, len, "%.*s", (int)strcspn(s, ","), s);
	return buf;
}

/* "0@(a-b,c,...)": lcore 0 on the calling thread's CPU set. */
static int lcores_arg(char *buf, size_t len)
{
	cpu_set_t set;
	size_t off;
	int cpu, first = -1;

	if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set))
		return -errno;
	off = snprintf(buf, len, "--lcores=0@(");
	for (cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);

		if (in && first < 0)
			first = cpu;
		if (in || first < 0)
			continue;
		if (off >= len)
			return -E2BIG;
		off +=
		    snprintf(buf + off, len - off, "%s%d", buf[off - 1] == '(' ? "" : ",", first);
		if (off < len && cpu - 1 > first)
			off += snprintf(buf + off, len - off, "-%d", cpu - 1);
		first = -1;
	}
	if (off + 2 > len || buf[off - 1] == '(')
		return -E2BIG;
	snprintf(buf + off, len - off, ")");
	return 0;
}

/* ---- start-up ----------------------------------------------------------------------- */

/* The runtime directory EAL made, if it was not empty after start-up
 * (telemetry's socket): removed at exit, after telemetry's own handler
 * unlinked the socket.  Written before it can be read (global lock). */
static char runtime_dir[512];
static char tel_socket[sizeof(runtime_dir) + 32];

static void runtime_dir_remove(void)
{
	if (runtime_dir[0])
		rmdir(runtime_dir);
}

const char *dr_tel_socket(void)
{
	return tel_socket;
}

/* A droce process killed by a signal leaves its runtime directory and
 * telemetry socket behind (no exit handler ran).  Siblings of our own
 * directory named droce-<number> whose socket nobody listens on any more
 * (connect: ECONNREFUSED; the PID alone could belong to another PID
 * namespace) lose the socket and, if that emptied them, the directory. */
static void sweep_stale(const char *own)
{
	char base[sizeof(runtime_dir)], path[sizeof(runtime_dir) + 300];
	const char *slash = strrchr(own, '/');
	struct dirent *de;
	DIR *d;

	if (!slash || (size_t)(slash - own) >= sizeof(base))
		return;
	snprintf(base, sizeof(base), "%.*s", (int)(slash - own), own);
	d = opendir(base);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		const char *c = de->d_name + 6;
		int fd;

		if (strncmp(de->d_name, "droce-", 6) || !*c ||
		    strspn(c, "0123456789") != strlen(c) || !strcmp(de->d_name, slash + 1))
			continue;
		snprintf(path, sizeof(path), "%s/%s/dpdk_telemetry.v2", base, de->d_name);
		if (strlen(path) >= sizeof(sun.sun_path))
			continue;
		strcpy(sun.sun_path, path);
		/* non-blocking: DPDK's telemetry listens with a backlog of
		 * 1, and a connect to a live process whose listener thread
		 * waits for a CPU blocks until it accepts (11 s once, with
		 * eight droce processes starting in one namespace on a
		 * loaded host); EAGAIN means alive, as a connection does */
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) && errno == ECONNREFUSED &&
		    !unlink(path)) {
			snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
			rmdir(path);
			dr_port_log(DR_PORT_LOG_INFO,
				    "removed %s, left by a droce process killed "
				    "before its exit handlers ran",
				    path);
		}
		close(fd);
	}
	closedir(d);
}

static bool eal_running; /* global lock */
static int eal_failed;	 /* sticky -errno of a failed start */
static char eal_fail_msg[sizeof(((struct dr_port_err *)0)->msg)];

bool dr_port_eal_running(void)
{
	bool r;

	pthread_mutex_lock(&dr_port_global_lock);
	r = eal_running;
	pthread_mutex_unlock(&dr_port_global_lock);
	return r;
}

static int timers_init(struct dr_port_err *err)
{
	int ret = rte_timer_subsystem_init();

	if (ret < 0 && ret != -EALREADY)
		return dr_port_fail(err, ret, DR_PORT_PARAM_NONE,
				    "DPDK timer subsystem: %s (increase EAL memory: -m)",
				    strerror(-ret));
	return 0;
}

static int eal_start(const char *extra, const char *device, struct dr_port_err *err)
{
	/* EAL may keep pointers into argv: it lives as long as the process */
	static char *argv[MAX_ARGS + 24];
	static char prefix[64], lcores[512], *extra_buf;
	char *tok[MAX_ARGS], line[1024], dpdk_msg[256];
	bool pci = device && dr_port_spec_is_pci(device);
	size_t off = 0;
	int argc = 0, ntok = 0, ret, i;
	static bool exit_hook;
	bool tel;
	FILE *logf;

	if (extra && *extra) {
		extra_buf = strdup(extra);
		if (!extra_buf)
			return dr_port_fail(err, -ENOMEM, DR_PORT_PARAM_NONE, "out of memory");
		ntok = split_args(extra_buf, tok, MAX_ARGS);
		if (ntok < 0) {
			ret = dr_port_fail(err, -EINVAL, DR_PORT_PARAM_EAL_ARGS,
					   ntok == -E2BIG ? "more than %d EAL arguments"
							  : "unbalanced quote in EAL arguments",
					   MAX_ARGS);
			goto out_free_args;
		}
	}
	for (i = 0; i < ntok; i++)
		if (!strcmp(tok[i], "-h") || !strcmp(tok[i], "--help") ||
		    !strcmp(tok[i], "--log-level=help")) {
			ret = dr_port_fail(err, -EINVAL, DR_PORT_PARAM_EAL_ARGS,
					   "EAL argument '%s' would exit the process", tok[i]);
			goto out_free_args;
		}

	argv[argc++] = program_invocation_short_name; /* EAL's syslog ident */
	if (!has_long(tok, ntok, "--huge-dir") && !has_long(tok, ntok, "--socket-mem") &&
	    !has_long(tok, ntok, "--socket-limit") && !has_long(tok, ntok, "--in-memory") &&
	    !has_long(tok, ntok, "--legacy-mem") && !has_long(tok, ntok, "--huge-unlink") &&
	    !has_long(tok, ntok, "--single-file-segments") && !has_long(tok, ntok, "--no-huge")) {
		argv[argc++] = "--no-huge";
		argv[argc++] = "--no-shconf";
		if (!has_short(tok, ntok, 'm')) {
			argv[argc++] = "-m";
			argv[argc++] = "256";
		}
	}
	if (!has_long(tok, ntok, "--file-prefix")) {
		snprintf(prefix, sizeof(prefix), "--file-prefix=droce-%d", (int)getpid());
		argv[argc++] = prefix;
	}
	if (!has_short(tok, ntok, 'a') && !has_short(tok, ntok, 'b') &&
	    !has_long(tok, ntok, "--allow") && !has_long(tok, ntok, "--block") &&
	    !has_long(tok, ntok, "--no-pci")) {
		if (pci) {
			static char pci_name[64];

			snprintf(pci_name, sizeof(pci_name), "%.*s", (int)strcspn(device, ","),
				 device);
			argv[argc++] = "-a";
			argv[argc++] = pci_name;
		} else {
			argv[argc++] = "--no-pci";
		}
	}
	/* telemetry on (EAL's default) unless the user says --no-telemetry:
	 * it costs an idle thread, and droce-stat reads the counters there */
	tel = !has_long(tok, ntok, "--no-telemetry");
	if (!has_short(tok, ntok, 'l') && !has_short(tok, ntok, 'c') &&
	    !has_long(tok, ntok, "--lcores") && !has_long(tok, ntok, "--main-lcore")) {
		ret = lcores_arg(lcores, sizeof(lcores));
		if (ret < 0) {
			dr_port_fail(err, ret, DR_PORT_PARAM_NONE,
				     "cannot read the thread's CPU set: %s", strerror(-ret));
			goto out_free_args;
		}
		argv[argc++] = lcores;
	}
	argv[argc++] = "--log-level=warning";
	for (i = 0; i < ntok; i++)
		argv[argc++] = tok[i];
	argv[argc] = NULL;

	for (i = 1; i < argc && off < sizeof(line); i++)
		off += snprintf(line + off, sizeof(line) - off, "%s%s", i > 1 ? " " : "", argv[i]);
	dr_port_log(DR_PORT_LOG_INFO, "starting DPDK EAL: %s", line);

	/* before rte_eal_init, or EAL writes to stdout and syslog */
	logf = dpdk_log_stream();
	if (logf)
		rte_openlog_stream(logf);

	dr_port_dpdk_err_clear();
	if (!exit_hook)
		exit_hook = atexit(runtime_dir_remove) == 0;
	ret = rte_eal_init(argc, argv);
	/* empty with --no-shconf and --no-telemetry; with telemetry it holds
	 * the socket until exit; a shared config (user's choice) stays */
	if (rte_eal_get_runtime_dir() && *rte_eal_get_runtime_dir() &&
	    rmdir(rte_eal_get_runtime_dir()) && errno == ENOTEMPTY)
		snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	if (ret < 0) {
		int e = rte_errno ? rte_errno : EINVAL;

		dr_port_dpdk_err(dpdk_msg, sizeof(dpdk_msg));
		eal_failed = -e;
		snprintf(eal_fail_msg, sizeof(eal_fail_msg),
			 "DPDK EAL failed to start: %.200s (extra EAL arguments: '%.80s')",
			 *dpdk_msg ? dpdk_msg : rte_strerror(e), extra ? extra : "");
		return dr_port_fail(err, eal_failed, DR_PORT_PARAM_EAL_ARGS, "%s", eal_fail_msg);
	}
	dr_port_log(DR_PORT_LOG_INFO, "DPDK EAL running: %s, IOVA as %s, main lcore %u",
		    rte_version(), rte_eal_iova_mode() == RTE_IOVA_VA ? "VA" : "PA",
		    rte_get_main_lcore());
	if (tel) {
		sweep_stale(rte_eal_get_runtime_dir());
		snprintf(tel_socket, sizeof(tel_socket), "%s/dpdk_telemetry.v2",
			 rte_eal_get_runtime_dir());
		dr_port_log(DR_PORT_LOG_INFO, "DPDK telemetry (droce-stat): %s", tel_socket);
	}
	return 0;

out_free_args:
	/* EAL never saw them: nothing keeps pointers into the copy */
	free(extra_buf);
	extra_buf = NULL;
	return ret;
}

int dr_port_eal_init(const char *extra_args, const char *device, struct dr_port_err *err)
{
	int ret = 0;

	pthread_mutex_lock(&dr_port_global_lock);
	if (eal_running)
		goto out;
	if (eal_failed) {
		ret = dr_port_fail(err, eal_failed, DR_PORT_PARAM_EAL_ARGS,
				   "%s (EAL cannot be restarted in this process)", eal_fail_msg);
		goto out;
	}
	if (rte_lcore_count() > 0) {
		/* the application started EAL itself: use it as it is */
		dr_port_log(DR_PORT_LOG_INFO,
			    "DPDK EAL already running; extra EAL arguments are ignored");
	} else {
		ret = eal_start(extra_args, device, err);
		if (ret < 0)
			goto out;
	}
	ret = timers_init(err);
	if (ret == 0) {
		dr_port_clock_init();
		eal_running = true;
	}
out:
	pthread_mutex_unlock(&dr_port_global_lock);
	return ret;
}

/* ---- threads ------------------------------------------------------------------------- */

static pthread_key_t thread_key;
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;

static void thread_exit(void *arg)
{
	rte_thread_unregister();
}

static void thread_key_make(void)
{
	pthread_key_create(&thread_key, thread_exit);
}

int dr_port_thread_ensure(void)
{
	/* checked on every poll: a plain TLS read, not a __tls_get_addr call */
	static __thread bool known __attribute__((tls_model("initial-exec")));
	static bool warned;

	if (known)
		return 0;
	if (rte_lcore_id() != LCORE_ID_ANY) {
		known = true;
		return 0;
	}
	pthread_once(&thread_once, thread_key_make);
	if (rte_thread_register() < 0) {
		if (!warned) {
			warned = true;
			dr_port_log(DR_PORT_LOG_WARN,
				    "cannot give this thread a DPDK lcore id (%s): more than %d "
				    "threads drive droce",
				    rte_strerror(rte_errno), RTE_MAX_LCORE);
		}
		return -EBUSY;
	}
	/* the value only has to be non-NULL for the destructor to run */
	pthread_setspecific(thread_key, &thread_key);
	known = true;
	dr_port_log(DR_PORT_LOG_DEBUG, "thread registered with DPDK as lcore %u", rte_lcore_id());
	return 0;
}

/* ---- the interrupt thread ------------------------------------------------------------- */

/* Global lock: one barrier at a time.  Static, not on the stack, so that
 * an alarm that fires after we gave up writes somewhere harmless. */
static int barrier_done;

static void barrier_cb(void *arg)
{
	__atomic_store_n(&barrier_done, 1, __ATOMIC_RELEASE);
}

void dr_port_intr_barrier(void)
{
	for (int round = 0; round < 2; round++) {
		uint64_t end = dr_port_now_ns() + 1000000000u;

		__atomic_store_n(&barrier_done, 0, __ATOMIC_RELAXED);
		if (rte_eal_alarm_set(1, barrier_cb, NULL) < 0)
			return;
		while (!__atomic_load_n(&barrier_done, __ATOMIC_ACQUIRE)) {
			if (dr_port_now_ns() > end) {
				rte_eal_alarm_cancel(barrier_cb, NULL);
				dr_port_log(DR_PORT_LOG_WARN, "DPDK's interrupt thread is stuck");
				return;
			}
			sched_yield();
		}
	}
}
