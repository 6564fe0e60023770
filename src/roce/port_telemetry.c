// SPDX-License-Identifier: BSD-2-Clause
/*
 * Live counters through DPDK telemetry: the port layer's thin side of it,
 * so that src/fi (which does not see DPDK) can answer /droce/... commands.
 *
 * DPDK 22.11 facts (lib/telemetry/telemetry.c): a command's callback gets
 * (cmd, params, data) and no context pointer, so one trampoline serves
 * every command and finds ours by name; callbacks run on a per-client
 * thread the telemetry listener creates, several at once when several
 * clients are connected; registration only appends to a table under a
 * spinlock and works before rte_telemetry_init (EAL's libraries register
 * from constructors); a callback returning < 0 makes the reply
 * {"cmd": null}.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_telemetry.h>

#include "port_priv.h"

/* Written under cmd_lock before the command is handed to DPDK, read by the
 * trampoline afterwards (DPDK's own spinlock orders the two). */
static pthread_mutex_t cmd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char cmd[64];
	dr_tel_fn fn;
} cmds[DR_TEL_MAX_CMDS];
static unsigned ncmds;

static int trampoline(const char *cmd, const char *params, struct rte_tel_data *d)
{
	dr_tel_fn fn = NULL;

	pthread_mutex_lock(&cmd_lock);
	for (unsigned i = 0; i < ncmds; i++)
		if (!strcmp(cmds[i].cmd, cmd))
			fn = cmds[i].fn;
	pthread_mutex_unlock(&cmd_lock);
	if (!fn)
		return -ENOENT;
	rte_tel_data_start_dict(d);
	return fn(params && *params ? params : NULL, (struct dr_tel *)d);
}

int dr_tel_register(const char *cmd, dr_tel_fn fn, const char *help)
{
	int ret = 0;

	/* telemetry's MAX_CMD_LEN is 56 with the terminator */
	if (!cmd || cmd[0] != '/' || strlen(cmd) >= 56 || strchr(cmd, ',') || !fn)
		return -EINVAL;
	pthread_mutex_lock(&cmd_lock);
	for (unsigned i = 0; i < ncmds; i++)
		if (!strcmp(cmds[i].cmd, cmd))
			goto out;
	if (ncmds == DR_TEL_MAX_CMDS) {
		ret = -ENOSPC;
		goto out;
	}
	snprintf(cmds[ncmds].cmd, sizeof(cmds[ncmds].cmd), "%s", cmd);
	cmds[ncmds].fn = fn;
	ret = rte_telemetry_register_cmd(cmds[ncmds].cmd, trampoline, help);
	if (ret == 0)
		ncmds++;
out:
	pthread_mutex_unlock(&cmd_lock);
	return ret;
}

int dr_tel_u64(struct dr_tel *t, const char *name, uint64_t value)
{
	return rte_tel_data_add_dict_u64((struct rte_tel_data *)t, name, value) ? -ENOSPC : 0;
}

int dr_tel_str(struct dr_tel *t, const char *name, const char *value)
{
	/* -E2BIG: added, cut at RTE_TEL_MAX_STRING_LEN */
	int ret = rte_tel_data_add_dict_string((struct rte_tel_data *)t, name, value);

	return ret == -ENOSPC || ret == -EINVAL ? ret : 0;
}
