// SPDX-License-Identifier: GPL-2.0
/*
 * QP verbs do not wait for RTNL. Run by rtnl.sh, which creates the device
 * and exports VROCE_DEV.
 *
 * The test holds RTNL from user space for as long as it likes: an ethtool
 * ioctl (ETHTOOL_GLINK on lo) runs under rtnl_lock() in dev_ethtool() and
 * ends with a copy_to_user() of its 8-byte reply; the reply straddles a
 * page boundary and the second page is registered with userfaultfd and
 * kept missing, so that copy sleeps, RTNL held, until the test supplies the
 * page. Meanwhile another thread issues the same ioctl with an ordinary
 * buffer: it must still be waiting for RTNL when the verbs are done, which
 * shows RTNL was held the whole time. The verbs (create an RC and a UD QP,
 * modify them to INIT, destroy them) must complete within VERBS_MAX_S.
 *
 * Kernel-mode userfaultfd faults need CAP_SYS_PTRACE (or the sysctl
 * vm.unprivileged_userfaultfd): rtnl.sh runs this as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <linux/userfaultfd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

/* How long the verbs may take while RTNL is held (a hang guard: ~ms). */
#define VERBS_MAX_S	5.0
/* How long the probe is given to get RTNL before we call it held. */
#define PROBE_WAIT_US	200000

struct glink {
	int sock;
	void *reply;		/* struct ethtool_value, user memory */
	int ret;		/* ioctl's return value, then errno if -1 */
	atomic_int done;
};

static void *glink_run(void *arg)
{
	struct glink *g = arg;
	struct ifreq ifr = {};

	strcpy(ifr.ifr_name, "lo");
	ifr.ifr_data = g->reply;
	g->ret = ioctl(g->sock, SIOCETHTOOL, &ifr);
	if (g->ret)
		g->ret = errno;
	atomic_store(&g->done, 1);
	return NULL;
}

struct verbs {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	const char *failed;	/* the verb that failed, or NULL */
	int err;
	double took_s;
	atomic_int done;
};

static int qp_cycle(struct verbs *v, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.send_cq = v->cq, .recv_cq = v->cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qkey = 0x11223344,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   (type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	struct ibv_qp *qp;

	qp = ibv_create_qp(v->pd, &init);
	if (!qp) {
		v->failed = "create_qp";
		v->err = errno;
		return -1;
	}
	v->err = ibv_modify_qp(qp, &attr, mask);
	if (v->err) {
		v->failed = "modify_qp(INIT)";
		ibv_destroy_qp(qp);
		return -1;
	}
	v->err = ibv_destroy_qp(qp);
	if (v->err) {
		v->failed = "destroy_qp";
		return -1;
	}
	return 0;
}

static void *verbs_run(void *arg)
{
	struct verbs *v = arg;
	double t0 = vroce_now_s();

	if (!qp_cycle(v, IBV_QPT_RC))
		qp_cycle(v, IBV_QPT_UD);
	v->took_s = vroce_now_s() - t0;
	atomic_store(&v->done, 1);
	return NULL;
}

/* Wait up to @max_s for @flag; 1 if it was set. */
static int wait_flag(atomic_int *flag, double max_s)
{
	double end = vroce_now_s() + max_s;

	while (!atomic_load(flag)) {
		if (vroce_now_s() > end)
			return 0;
		usleep(1000);
	}
	return 1;
}

FIXTURE(rtnl) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int uffd;
	int sock;
	uint8_t *pages;
	long psz;
};

FIXTURE_SETUP(rtnl)
{
	const char *name = getenv("VROCE_DEV");
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

	self->uffd = -1;
	self->sock = -1;
	self->pages = MAP_FAILED;
	if (!name)
		SKIP(return, "VROCE_DEV not set (run rtnl.sh)");
	self->ctx = vroce_open_by_name(name);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", name);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	self->sock = socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, self->sock);

	self->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->uffd) TH_LOG("userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_API, &api));
	self->psz = sysconf(_SC_PAGESIZE);
	self->pages = mmap(NULL, 2 * self->psz, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->pages);
	memset(self->pages, 0, self->psz);	/* page 0 present, page 1 not */
	reg.range.start = (uintptr_t)self->pages + self->psz;
	reg.range.len = self->psz;
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_REGISTER, &reg))
		TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));
}

FIXTURE_TEARDOWN(rtnl)
{
	if (self->pages != MAP_FAILED)
		munmap(self->pages, 2 * self->psz);
	if (self->uffd >= 0)
		close(self->uffd);
	if (self->sock >= 0)
		close(self->sock);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/* The holder's fault on page 1: it is inside copy_to_user(), RTNL held. */
static int wait_fault(int uffd, uintptr_t page, long psz)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&pfd, 1, 5000) != 1)
		return -1;
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT ||
	    (msg.arg.pagefault.address & ~(uintptr_t)(psz - 1)) != page)
		return -1;
	return 0;
}

TEST_F_TIMEOUT(rtnl, qp_verbs_while_rtnl_held, 60)
{
	uintptr_t page1 = (uintptr_t)self->pages + self->psz;
	struct ethtool_value probe_buf = { .cmd = ETHTOOL_GLINK };
	struct glink hold = { .sock = self->sock };
	struct glink probe = { .sock = self->sock, .reply = &probe_buf };
	struct verbs v = { .pd = self->pd, .cq = self->cq };
	struct uffdio_zeropage zp = {
		.range = { .start = page1, .len = self->psz },
	};
	int probe_waited = 0, verbs_done = 0, probe_waited_after = 0;
	int faulted;
	pthread_t th_hold, th_probe, th_verbs;

	/* The reply's cmd word ends page 0, its data word starts page 1. */
	hold.reply = (uint8_t *)page1 - 4;
	*(uint32_t *)hold.reply = ETHTOOL_GLINK;
	ASSERT_EQ(0, pthread_create(&th_hold, NULL, glink_run, &hold));
	faulted = !wait_fault(self->uffd, page1, self->psz);

	if (faulted) {
		ASSERT_EQ(0, pthread_create(&th_probe, NULL, glink_run,
					    &probe));
		usleep(PROBE_WAIT_US);
		probe_waited = !atomic_load(&probe.done);
		ASSERT_EQ(0, pthread_create(&th_verbs, NULL, verbs_run, &v));
		verbs_done = wait_flag(&v.done, VERBS_MAX_S);
		probe_waited_after = !atomic_load(&probe.done);
	}

	/* Let the holder finish (and so RTNL go), whatever happened. */
	ioctl(self->uffd, UFFDIO_ZEROPAGE, &zp);
	pthread_join(th_hold, NULL);
	ASSERT_TRUE(faulted) TH_LOG("the ethtool ioctl did not fault on the userfaultfd page (ret %d)",
				    hold.ret);
	pthread_join(th_probe, NULL);
	pthread_join(th_verbs, NULL);

	EXPECT_EQ(0, hold.ret) TH_LOG("ETHTOOL_GLINK (holder): %s",
				      strerror(hold.ret));
	EXPECT_EQ(0, probe.ret) TH_LOG("ETHTOOL_GLINK (probe): %s",
				       strerror(probe.ret));
	ASSERT_TRUE(probe_waited) TH_LOG("another RTNL user was not held up: RTNL was not held");
	ASSERT_TRUE(verbs_done) TH_LOG("the QP verbs did not finish in %.0f s while RTNL was held (they took %.1f s in all)",
				       VERBS_MAX_S, v.took_s);
	ASSERT_TRUE(probe_waited_after) TH_LOG("RTNL was released before the QP verbs were done");
	ASSERT_EQ(NULL, v.failed) TH_LOG("%s: %s", v.failed, strerror(v.err));
	TH_LOG("create, modify, destroy of an RC and a UD QP with RTNL held: %.1f ms",
	       v.took_s * 1e3);
}

TEST_HARNESS_MAIN
