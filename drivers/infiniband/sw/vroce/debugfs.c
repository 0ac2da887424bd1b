// SPDX-License-Identifier: GPL-2.0
/*
 * Test hooks in debugfs, netdevsim-style: /sys/kernel/debug/vroce/<ibdev>/.
 * The grammar of every file is in Documentation/infiniband/vroce.rst.
 *
 * Lifetime: the directory of a device is created once the device is
 * registered and removed by its dealloc (vroce_dev_dealloc()), which ib_core
 * calls only after every registration reference is gone. debugfs_remove()
 * waits for file operations in progress; each operation holds a
 * registration reference (ib_device_try_get()) for its duration, and fails
 * with ENODEV once the device is being unregistered. The directory keeps
 * the name the device had when it was registered. debugfs failures are
 * ignored: the driver works without it.
 *
 * xmit_test: writing one line sends one RoCE packet through the transmit
 * path (tx.c), with a payload whose byte i is i & 0xff.
 *
 * cc_qps: one line per QP with its congestion-control state (cc_rp.c),
 * read without the QP's task lock: each value is current, the line is not
 * a snapshot.
 *
 * lend_delay_us: after copying a long READ response with the requester
 * lent (comp.c), the task keeps it lent this much longer, at most 1 s, so
 * that a test can post doorbells into the window. 0 (the default) adds
 * nothing.
 *
 * err_delay_us: a QP entering ERR waits this long, at most 1 s, after the
 * state change and before it flushes its queues (qp_state.c), so that a
 * test can post into the window. 0 (the default) adds nothing.
 *
 * dealloc_delay_ms: the device's dealloc (device.c) waits this long, at
 * most 1 s, once it removed this directory and released the namespace's
 * sockets, before it lets go of the netdev, so that a test can run module
 * unload or the netdev's removal in that window. 0 (the default) adds
 * nothing.
 */

#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/inet.h>
#include <linux/kernel.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_cache.h>

#include "compat.h"
#include "debugfs.h"
#include "device.h"
#include "opcode.h"
#include "port.h"
#include "qp.h"
#include "tx.h"

static struct dentry *vroce_debugfs_root;

/* Keys of an xmit_test line, each given at most once. */
enum vroce_xt_key {
	XT_SGID_INDEX,
	XT_DGID,
	XT_DMAC,
	XT_DQPN,
	XT_OPCODE,
	XT_LEN,
	XT_PSN,
	XT_SQPN,
	XT_TCLASS,
	XT_HOP_LIMIT,
	XT_FLOW_LABEL,
	XT_SL,
	XT_PKEY,
	XT_NUM_KEYS
};

/**
 * struct vroce_xt_key_info - one key of the xmit_test grammar
 * @name: the key, before "="
 * @required: the line must have it
 * @max: the largest value of a numeric key; 0 for the other keys
 * @dflt: the value of an absent optional numeric key
 */
struct vroce_xt_key_info {
	const char *name;
	bool required;
	u32 max;
	u32 dflt;
};

static const struct vroce_xt_key_info vroce_xt_keys[] = {
	[XT_SGID_INDEX] = { "sgid_index", true, VROCE_GID_TABLE_LEN - 1 },
	[XT_DGID] = { "dgid", true },
	[XT_DMAC] = { "dmac", true },
	[XT_DQPN] = { "dqpn", true, VROCE_QPN_MASK },
	[XT_OPCODE] = { "opcode", true },
	[XT_LEN] = { "len", true, U16_MAX },
	[XT_PSN] = { "psn", false, VROCE_PSN_MASK, 0 },
	[XT_SQPN] = { "sqpn", false, VROCE_QPN_MASK, 1 },
	[XT_TCLASS] = { "tclass", false, U8_MAX, 0 },
	[XT_HOP_LIMIT] = { "hop_limit", false, U8_MAX, 64 },
	[XT_FLOW_LABEL] = { "flow_label", false, 0xfffff, 0 },
	[XT_SL] = { "sl", false, 7, 0 },
	[XT_PKEY] = { "pkey", false, U16_MAX, VROCE_DEFAULT_PKEY },
};

/* A parsed xmit_test line. */
struct vroce_xt_req {
	u32 num[XT_NUM_KEYS];
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 opcode;
};

#define VROCE_XT_LINE_MAX 256

static int vroce_xt_key(const char *name)
{
	int i;

	for (i = 0; i < XT_NUM_KEYS; i++)
		if (!strcmp(vroce_xt_keys[i].name, name))
			return i;
	return -EINVAL;
}

/* An IPv4 address becomes an IPv4-mapped GID. */
static int vroce_xt_parse_gid(const char *s, union ib_gid *gid)
{
	__be32 ip4;

	if (in4_pton(s, -1, (u8 *)&ip4, '\0', NULL)) {
		ipv6_addr_set_v4mapped(ip4, (struct in6_addr *)gid->raw);
		return 0;
	}
	return in6_pton(s, -1, gid->raw, '\0', NULL) ? 0 : -EINVAL;
}

static int vroce_xt_parse_value(struct vroce_xt_req *req, int key,
				const char *val)
{
	int op;

	switch (key) {
	case XT_DGID:
		return vroce_xt_parse_gid(val, &req->dgid);
	case XT_DMAC:
		return mac_pton(val, req->dmac) && strlen(val) == 17 ? 0 :
								       -EINVAL;
	case XT_OPCODE:
		op = vroce_opcode_by_name(val);
		if (op < 0)
			return -EINVAL;
		req->opcode = op;
		return 0;
	default:
		if (kstrtou32(val, 0, &req->num[key]) ||
		    req->num[key] > vroce_xt_keys[key].max)
			return -EINVAL;
		return 0;
	}
}

/* Parse "key=value key=value ...": every key known, once, required ones present. */
static int vroce_xt_parse(char *line, struct vroce_xt_req *req)
{
	unsigned long seen = 0;
	char *tok, *val;
	int key, err;

	while ((tok = strsep(&line, " ")) != NULL) {
		if (!*tok)
			return -EINVAL;	/* leading, trailing or double space */
		val = strchr(tok, '=');
		if (!val)
			return -EINVAL;
		*val++ = '\0';
		key = vroce_xt_key(tok);
		if (key < 0 || (seen & BIT(key)))
			return -EINVAL;
		err = vroce_xt_parse_value(req, key, val);
		if (err)
			return err;
		seen |= BIT(key);
	}
	for (key = 0; key < XT_NUM_KEYS; key++) {
		if (seen & BIT(key))
			continue;
		if (vroce_xt_keys[key].required)
			return -EINVAL;
		req->num[key] = vroce_xt_keys[key].dflt;
	}
	return 0;
}

/*
 * Byte i of the payload is i & 0xff; pieces (tx.c) are whole pages, so each
 * piece starts the pattern over where it would have been anyway.
 */
static int vroce_xt_fill(void *ctx, void *dst, u32 len)
{
	u8 *p = dst;
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = i & 0xff;
	return 0;
}

static void vroce_xt_pkt_info(struct vroce_pkt_info *pi,
			      const struct vroce_xt_req *req)
{
	const u32 *num = req->num;

	pi->dgid = req->dgid;
	ether_addr_copy(pi->dmac, req->dmac);
	pi->traffic_class = num[XT_TCLASS];
	pi->hop_limit = num[XT_HOP_LIMIT];
	pi->flow_label = num[XT_FLOW_LABEL];
	pi->sl = num[XT_SL];
	pi->opcode = req->opcode;
	pi->ackreq = vroce_opcodes[req->opcode].flags & VROCE_OP_ACKREQ;
	pi->pkey = num[XT_PKEY];
	pi->sqpn = num[XT_SQPN];
	pi->dqpn = num[XT_DQPN];
	pi->psn = num[XT_PSN];
	pi->ext.deth.qkey = cpu_to_be32(VROCE_GSI_QKEY);
	pi->ext.deth.sqpn = cpu_to_be32(num[XT_SQPN]);
	pi->paylen = num[XT_LEN];
	pi->fill = vroce_xt_fill;
}

static int vroce_xt_send(struct vroce_dev *vdev, const struct vroce_xt_req *req)
{
	struct vroce_pkt_info pi = {};
	int err;

	pi.sgid_attr = rdma_get_gid_attr(&vdev->ibdev, 1,
					 req->num[XT_SGID_INDEX]);
	if (IS_ERR(pi.sgid_attr))
		return PTR_ERR(pi.sgid_attr);
	vroce_xt_pkt_info(&pi, req);
	err = vroce_tx(vdev, &pi, GFP_KERNEL);
	rdma_put_gid_attr(pi.sgid_attr);
	return err;
}

static ssize_t vroce_xt_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	struct vroce_dev *vdev = file->private_data;
	struct vroce_xt_req req = {};
	char *line;
	int err;

	if (*ppos || !count || count >= VROCE_XT_LINE_MAX)
		return -EINVAL;
	line = memdup_user_nul(ubuf, count);
	if (IS_ERR(line))
		return PTR_ERR(line);
	if (line[count - 1] == '\n')
		line[count - 1] = '\0';

	err = vroce_xt_parse(line, &req);
	if (err)
		goto out_free_line;
	if (!ib_device_try_get(&vdev->ibdev)) {
		err = -ENODEV;
		goto out_free_line;
	}
	err = vroce_xt_send(vdev, &req);
	ib_device_put(&vdev->ibdev);

out_free_line:
	kfree(line);
	return err ? err : count;
}

static const struct file_operations vroce_xt_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = vroce_xt_write,
};

static void vroce_cc_qp_show(struct seq_file *m, struct vroce_qp *qp)
{
	const struct vroce_dcqcn *rp = &qp->cc.rp;

	seq_printf(m, "%u %u %u %u %u %u %llu\n", qp->ibqp.qp_num,
		   qp->cc.prio, READ_ONCE(qp->cc.rate_kbps),
		   READ_ONCE(rp->rc_kbps), READ_ONCE(rp->rt_kbps),
		   READ_ONCE(rp->alpha), READ_ONCE(rp->cnp_handled));
}

static int vroce_cc_qps_show(struct seq_file *m, void *unused)
{
	struct vroce_dev *vdev = m->private;
	struct vroce_qp_ref *ref;
	struct vroce_qp *qp;
	unsigned long qpn;

	if (!ib_device_try_get(&vdev->ibdev))
		return -ENODEV;
	seq_puts(m, "qpn prio rate_kbps current_kbps target_kbps alpha cnp_handled\n");
	xa_for_each(&vdev->qps, qpn, ref) {
		qp = vroce_qp_get(vdev, qpn);
		if (!qp)
			continue;
		vroce_cc_qp_show(m, qp);
		vroce_qp_put(qp);
	}
	ib_device_put(&vdev->ibdev);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vroce_cc_qps);

/* Test knobs of the driver's debugfs root (device.c, query.c); 0 by default. */
u32 vroce_link_add_delay_ms;
u32 vroce_max_objects;

void vroce_debugfs_init(void)
{
	vroce_debugfs_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_u32("link_add_delay_ms", 0600, vroce_debugfs_root,
			   &vroce_link_add_delay_ms);
	debugfs_create_u32("max_objects", 0600, vroce_debugfs_root,
			   &vroce_max_objects);
}

void vroce_debugfs_exit(void)
{
	debugfs_remove_recursive(vroce_debugfs_root);
}

/**
 * vroce_debugfs_dev_add - create the debugfs directory of a registered device
 * @vdev: the device
 *
 * Context: process context, vroce_devs_lock held (device.c).
 */
void vroce_debugfs_dev_add(struct vroce_dev *vdev)
{
	vdev->debugfs = debugfs_create_dir(dev_name(&vdev->ibdev.dev),
					   vroce_debugfs_root);
	debugfs_create_file("xmit_test", 0200, vdev->debugfs, vdev,
			    &vroce_xt_fops);
	debugfs_create_file("cc_qps", 0400, vdev->debugfs, vdev,
			    &vroce_cc_qps_fops);
	debugfs_create_u32("lend_delay_us", 0600, vdev->debugfs,
			   &vdev->lend_delay_us);
	debugfs_create_u32("err_delay_us", 0600, vdev->debugfs,
			   &vdev->err_delay_us);
	debugfs_create_u32("dealloc_delay_ms", 0600, vdev->debugfs,
			   &vdev->dealloc_delay_ms);
}

/**
 * vroce_debugfs_dev_del - remove what vroce_debugfs_dev_add() created
 * @vdev: the device, unregistered
 *
 * Context: process context; waits for file operations in progress.
 */
void vroce_debugfs_dev_del(struct vroce_dev *vdev)
{
	debugfs_remove_recursive(vdev->debugfs);
	vdev->debugfs = NULL;
}
