// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce-stat: the live counters of running droce processes, printed the
 * way `rdma statistic show` prints rdma_rxe's:
 *
 *	link droce-<pid>/<port> sent_pkts N rcvd_pkts N ...
 *	qp <qpn> link droce-<pid>/<port> state RTS rto_us N sent_pkts N ...  (-q)
 *
 * It reads them from DPDK telemetry, which droce's EAL serves on
 * <runtime dir>/dpdk_telemetry.v2 (/var/run/dpdk/droce-<pid>/ for root,
 * $XDG_RUNTIME_DIR/dpdk/droce-<pid>/ or /tmp/dpdk/droce-<pid>/ otherwise):
 * a SOCK_SEQPACKET socket that greets with a JSON object and answers each
 * command ("/droce/port,1") with one JSON object {"command": {...}}.  The
 * /droce replies are flat dictionaries of numbers and strings, so a small
 * parser does; no JSON library.  fi_droce(7), "Live counters", names each
 * counter.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PROG	  "droce-stat"
#define SOCK_NAME "dpdk_telemetry.v2"
#define REPLY_MAX (1 << 16) /* DPDK 22.11 replies are at most 16 KiB */
#define MAX_ENT	  512

struct ent {
	char name[64];
	char str[160];
	unsigned long long num;
	bool is_num;
};

struct reply {
	struct ent e[MAX_ENT];
	int n;
};

static bool opt_qp, opt_all;
static const char *opt_cmd; /* -c: one command, its reply printed as it came */

/* "..." at *p (JSON string, escapes kept simple: \" \\ \/ and \uXXXX as
 * '?'); *p moves past it. */
static int parse_str(const char **p, char *out, size_t len)
{
	const char *s = *p;
	size_t n = 0;

	if (*s++ != '"')
		return -1;
	while (*s && *s != '"') {
		char c = *s++;

		if (c == '\\') {
			c = *s++;
			if (c == 'u') {
				for (int i = 0; i < 4 && *s; i++)
					s++;
				c = '?';
			} else if (!c) {
				return -1;
			}
		}
		if (n + 1 < len)
			out[n++] = c;
	}
	if (*s != '"')
		return -1;
	out[n] = 0;
	*p = s + 1;
	return 0;
}

static void skip_ws(const char **p)
{
	while (isspace((unsigned char)**p))
		(*p)++;
}

/* {"cmd": {"k": v, ...}} with v a string or an unsigned integer; "null"
 * for the inner object is an error the process reported. */
static int parse_reply(const char *json, struct reply *r)
{
	const char *p = json;
	char key[64];

	r->n = 0;
	skip_ws(&p);
	if (*p++ != '{')
		return -1;
	skip_ws(&p);
	if (parse_str(&p, key, sizeof(key)))
		return -1;
	skip_ws(&p);
	if (*p++ != ':')
		return -1;
	skip_ws(&p);
	if (!strncmp(p, "null", 4))
		return -ENOENT;
	if (*p++ != '{')
		return -1;
	for (;;) {
		struct ent *e = &r->e[r->n];

		skip_ws(&p);
		if (*p == '}')
			return 0;
		if (r->n == MAX_ENT || parse_str(&p, e->name, sizeof(e->name)))
			return -1;
		skip_ws(&p);
		if (*p++ != ':')
			return -1;
		skip_ws(&p);
		if (*p == '"') {
			if (parse_str(&p, e->str, sizeof(e->str)))
				return -1;
			e->is_num = false;
		} else {
			char *end;

			errno = 0;
			e->num = strtoull(p, &end, 10);
			if (errno || end == p)
				return -1;
			e->is_num = true;
			p = end;
		}
		r->n++;
		skip_ws(&p);
		if (*p == ',')
			p++;
		else if (*p != '}')
			return -1;
	}
}

static const struct ent *find(const struct reply *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->e[i].name, name))
			return &r->e[i];
	return NULL;
}

static char buf[REPLY_MAX + 1];

/* One command, one reply.  0, -ENOENT (the process answered null: no such
 * port or QP), or -1 with a message. */
static int ask(int fd, const char *path, const char *cmd, struct reply *r)
{
	ssize_t n;
	int ret;

	if (send(fd, cmd, strlen(cmd), 0) < 0) {
		fprintf(stderr, PROG ": %s: send: %s\n", path, strerror(errno));
		return -1;
	}
	n = recv(fd, buf, REPLY_MAX, 0);
	if (n <= 0) {
		fprintf(stderr, PROG ": %s: %s: %s\n", path, cmd,
			n ? strerror(errno) : "connection closed");
		return -1;
	}
	buf[n] = 0;
	ret = parse_reply(buf, r);
	if (ret == -1)
		fprintf(stderr, PROG ": %s: %s: cannot read the reply: %.200s\n", path, cmd, buf);
	return ret;
}

/* Shown even when 0: rdma_rxe's counters and a QP's identity. */
static const char *const always[] = {
    "qps",
    "sent_pkts",
    "rcvd_pkts",
    "duplicate_request",
    "out_of_seq_request",
    "rcvd_seq_err",
    "send_rnr_err",
    "rcvd_rnr_err",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "completer_retry_err",
    "send_err",
    "dest_qpn",
    "start_psn",
    "sq_psn",
    "rq_psn",
    "path_mtu",
    "rto_us",
    NULL,
};

static bool listed(const char *name, const char *const *list)
{
	for (int k = 0; list[k]; k++)
		if (!strcmp(name, list[k]))
			return true;
	return false;
}

static void print_nums(const struct reply *r, const char *const *skip)
{
	for (int i = 0; i < r->n; i++) {
		const struct ent *e = &r->e[i];

		if (e->is_num && !listed(e->name, skip) &&
		    (opt_all || e->num || listed(e->name, always)))
			printf(" %s %llu", e->name, e->num);
	}
	printf("\n");
}

static struct reply ports, port, qps, qp;

/* Every port (and with -q every QP) of the process behind path: 0, 1 when
 * a process found by listing (pid) went away meanwhile, -1 on an error
 * (said). */
static int show(const char *path, long pid)
{
	static const char *const port_skip[] = {"port", NULL};
	static const char *const qp_skip[] = {"qpn", "port", NULL};
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char cmd[64];
	const char *p;
	int fd, ret = 0;
	ssize_t n;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, PROG ": %s: path too long\n", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		/* found while listing, gone since: it exited */
		if (pid && !opt_cmd && (e == ENOENT || e == ECONNREFUSED))
			return 1;
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(e));
		return -1;
	}
	/* the greeting: {"version": ..., "pid": ..., "max_output_len": ...} */
	n = recv(fd, buf, REPLY_MAX, 0);
	if (n <= 0) {
		fprintf(stderr, PROG ": %s: no greeting\n", path);
		close(fd);
		return -1;
	}
	buf[n] = 0;
	if (!pid && (p = strstr(buf, "\"pid\":")))
		pid = strtol(p + 6, NULL, 10);
	if (opt_cmd) {
		if (send(fd, opt_cmd, strlen(opt_cmd), 0) < 0 ||
		    (n = recv(fd, buf, REPLY_MAX, 0)) <= 0) {
			fprintf(stderr, PROG ": %s: %s: %s\n", path, opt_cmd,
				n ? strerror(errno) : "connection closed");
			close(fd);
			return -1;
		}
		printf("%.*s\n", (int)n, buf);
		close(fd);
		return 0;
	}
	if (ask(fd, path, "/droce/ports", &ports)) {
		fprintf(stderr, PROG ": %s: not a droce process (no /droce/ports)\n", path);
		close(fd);
		return -1;
	}
	if (opt_qp && ask(fd, path, "/droce/qps", &qps))
		ret = -1;
	for (int i = 0; i < ports.n && !ret; i++) {
		const char *id = ports.e[i].name;

		snprintf(cmd, sizeof(cmd), "/droce/port,%s", id);
		ret = ask(fd, path, cmd, &port);
		if (ret == -ENOENT) { /* closed meanwhile */
			ret = 0;
			continue;
		}
		if (ret)
			break;
		printf("link droce-%ld/%s", pid, id);
		print_nums(&port, port_skip);
		for (int q = 0; opt_qp && q < qps.n && !ret; q++) {
			const struct ent *st;

			if (!qps.e[q].is_num || qps.e[q].num != strtoull(id, NULL, 10))
				continue;
			snprintf(cmd, sizeof(cmd), "/droce/qp,%s,%s", qps.e[q].name, id);
			ret = ask(fd, path, cmd, &qp);
			if (ret == -ENOENT) {
				ret = 0;
				continue;
			}
			if (ret)
				break;
			st = find(&qp, "state");
			printf("qp %s link droce-%ld/%s state %s", qps.e[q].name, pid, id,
			       st ? st->str : "?");
			print_nums(&qp, qp_skip);
		}
	}
	close(fd);
	return ret ? -1 : 0;
}

/* droce-<pid> directories under the runtime bases, each socket once. */
static int show_all(long want)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char xdg_dpdk[4096];
	const char *bases[3] = {"/var/run/dpdk", NULL, "/tmp/dpdk"};
	char seen[64][64];
	int nseen = 0, found = 0, failed = 0, ret;

	if (xdg && *xdg) {
		snprintf(xdg_dpdk, sizeof(xdg_dpdk), "%s/dpdk", xdg);
		bases[1] = xdg_dpdk;
	}
	for (int b = 0; b < 3; b++) {
		struct dirent *de;
		DIR *d;

		if (!bases[b] || !(d = opendir(bases[b])))
			continue;
		while ((de = readdir(d))) {
			char path[4096 + 300], *end;
			struct stat st;
			long pid;
			bool dup = false;

			if (strncmp(de->d_name, "droce-", 6))
				continue;
			pid = strtol(de->d_name + 6, &end, 10);
			if (*end || pid <= 0 || (want && pid != want))
				continue;
			/* a process killed before its exit handlers ran
			 * leaves its socket behind */
			if (kill((pid_t)pid, 0) && errno == ESRCH)
				continue;
			snprintf(path, sizeof(path), "%s/%s/" SOCK_NAME, bases[b], de->d_name);
			if (stat(path, &st) || !S_ISSOCK(st.st_mode))
				continue;
			for (int i = 0; i < nseen; i++)
				dup |= !strcmp(seen[i], de->d_name);
			if (dup)
				continue;
			if (nseen < 64)
				snprintf(seen[nseen++], sizeof(seen[0]), "%.63s", de->d_name);
			ret = show(path, pid);
			found += ret <= 0;
			failed += ret < 0;
		}
		closedir(d);
	}
	if (!found) {
		if (want)
			fprintf(stderr,
				PROG ": no telemetry socket of droce process %ld (is it running "
				     "droce with telemetry on? FI_DROCE_EAL_ARGS=--no-telemetry "
				     "turns it off)\n",
				want);
		else
			fprintf(stderr, PROG ": no running droce process with telemetry found\n");
		return 1;
	}
	return failed ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [-q] [-a] [-c COMMAND] [-p PID | -s SOCKET]\n"
		   "  Live counters of running droce processes (DPDK telemetry), printed like\n"
		   "  `rdma statistic show`: one 'link droce-PID/PORT' line per port.\n"
		   "  -p PID     that process only (default: every droce process found)\n"
		   "  -s SOCKET  a telemetry socket (dpdk_telemetry.v2) given by path\n"
		   "  -q         also one 'qp QPN' line per queue pair\n"
		   "  -a         every counter (default: rdma_rxe's names and non-zero others)\n"
		   "  -c COMMAND send one telemetry command (e.g. /, /droce/qp,QPN) and print\n"
		   "             its JSON reply as it came\n");
}

int main(int argc, char **argv)
{
	const char *sock = NULL;
	long pid = 0;
	char *end;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "p:s:c:qah")) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || *end || pid <= 0) {
				fprintf(stderr, PROG ": bad PID '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			sock = optarg;
			break;
		case 'q':
			opt_qp = true;
			break;
		case 'a':
			opt_all = true;
			break;
		case 'c':
			opt_cmd = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (sock && pid)) {
		usage(stderr);
		return 2;
	}
	if (sock)
		return show(sock, 0) ? 1 : 0;
	return show_all(pid);
}
