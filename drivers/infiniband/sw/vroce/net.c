// SPDX-License-Identifier: GPL-2.0
/*
 * Per network namespace RoCEv2 receive sockets.
 *
 * A namespace that holds at least one vroce device owns a UDP tunnel socket
 * bound to port 4791 for IPv4 and, where IPv6 is available, one for IPv6.
 * init_net keeps its sockets for as long as the module is loaded, so
 * that anything else on port 4791 there (rdma_rxe up to 6.12 binds it when
 * it loads; rxe_guard.c keeps rdma_rxe out on every kernel) fails, and
 * vroce's load fails if the port is taken.
 *
 * A socket receives the datagrams of its own namespace only, but these may
 * have arrived on an upper device (macvlan, ipvlan, VLAN) whose lower
 * device, and that device's vroce device, are in another namespace: rx.c
 * looks the device up in the namespace of the netdev the datagram arrived
 * on, and never beyond it (vroce_rx_find_dev()).
 *
 * Locking and lifetime:
 * - vroce_net_lock (a mutex, process context only) protects ->users and the
 *   socket pointers of every namespace. It is global, not per namespace, so
 *   that the namespace exit path may free its vroce_net as soon as it saw
 *   ->users drop to zero.
 * - ->users counts the devices bound to the namespace plus, for init_net,
 *   the module itself. The sockets exist exactly while ->users > 0.
 * - A device drops its user in its dealloc path, which can run after the
 *   netdev left a dying namespace. The pernet exit handler therefore waits
 *   (vroce_net_wq) until every device of the namespace is gone before it
 *   returns and the namespace is freed.
 * - That wait ends, because everything it waits for is removed by the
 *   namespace's own teardown: a user is either an "rdma link add" in
 *   progress, which holds a reference to the namespace (so its exit has not
 *   begun), or a device whose netdev is, or was, in the namespace
 *   (device.c checks this at publish, under RTNL). The teardown removes or
 *   moves away every netdev of the namespace before the pernet exit
 *   handlers run, and each such netdev queues its device's unregistration;
 *   that unregistration waits only for ib_core's per-device lock (another
 *   unregistration or a namespace move, both bounded) and the device's
 *   dealloc, none of which waits for a namespace to exit.
 */

#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>

#include "compat.h"
#include "net.h"
#include "rx.h"

struct vroce_net {
	struct socket *sock4;
	struct socket *sock6;
	unsigned int users;
};

static unsigned int vroce_net_id __read_mostly;
static DEFINE_MUTEX(vroce_net_lock);
static DECLARE_WAIT_QUEUE_HEAD(vroce_net_wq);

static struct vroce_net *vroce_net(struct net *net)
{
	return net_generic(net, vroce_net_id);
}

/* RoCEv2 datagrams are always consumed: the host UDP stack never sees them. */
static int vroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	vroce_rx_v2(skb);
	return 0;
}

static struct socket *vroce_udp_open(struct net *net, bool ipv6)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = vroce_udp_encap_recv,
	};
	struct udp_port_cfg ucfg = {
		.local_udp_port = htons(VROCE_ROCE_V2_UDP_PORT),
	};
	struct socket *sock;
	int err;

	if (ipv6) {
		ucfg.family = AF_INET6;
		ucfg.ipv6_v6only = 1;
	} else {
		ucfg.family = AF_INET;
	}

	err = udp_sock_create(net, &ucfg, &sock);
	if (err)
		return ERR_PTR(err);

	vroce_compat_setup_udp_tunnel_sock(net, sock, &tcfg);
	return sock;
}

static void vroce_udp_close(struct socket **sockp)
{
	if (*sockp) {
		vroce_compat_udp_tunnel_sock_release(*sockp);
		*sockp = NULL;
	}
}

static void vroce_net_close(struct vroce_net *vn)
{
	lockdep_assert_held(&vroce_net_lock);

	vroce_udp_close(&vn->sock6);
	vroce_udp_close(&vn->sock4);
}

/*
 * The inode of the IPv4 socket bound to port 4791 on any address in @net,
 * for the message below (ss -e shows it as ino:, ss -p its process), or 0
 * if there is none or this kernel cannot look it up.
 */
static unsigned long vroce_net_port_holder(struct net *net, kuid_t *uid)
{
	unsigned long ino = 0;
#if IS_ENABLED(CONFIG_NF_TPROXY_IPV4) || IS_ENABLED(CONFIG_NF_SOCKET_IPV4)
	struct sock *sk;

	rcu_read_lock();
	sk = udp4_lib_lookup(net, 0, 0, 0, htons(VROCE_ROCE_V2_UDP_PORT), 0);
	rcu_read_unlock();
	if (sk) {
		ino = sock_i_ino(sk);
		*uid = vroce_compat_sk_uid(sk);
		sock_put(sk);
	}
#endif
	return ino;
}

/*
 * rdma link add has no extended ack: the reason goes to the kernel log,
 * with the namespace (as readlink /proc/PID/ns/net shows it) and, if found,
 * the socket that holds the port.
 */
static void vroce_net_port_taken(struct net *net)
{
	kuid_t uid = GLOBAL_ROOT_UID;
	unsigned long ino = vroce_net_port_holder(net, &uid);

	if (ino)
		pr_err_ratelimited("UDP port %u is already in use in network namespace net:[%u], by socket inode %lu of uid %u (ss -uanep 'sport = :%u' shows its process); is rdma_rxe loaded or another RoCE stack running?\n",
				   VROCE_ROCE_V2_UDP_PORT, net->ns.inum, ino,
				   from_kuid_munged(current_user_ns(), uid),
				   VROCE_ROCE_V2_UDP_PORT);
	else
		pr_err_ratelimited("UDP port %u is already in use in network namespace net:[%u] (ss -uanep 'sport = :%u' shows by whom); is rdma_rxe loaded or another RoCE stack running?\n",
				   VROCE_ROCE_V2_UDP_PORT, net->ns.inum,
				   VROCE_ROCE_V2_UDP_PORT);
}

static int vroce_net_open(struct net *net, struct vroce_net *vn)
{
	struct socket *sock;

	lockdep_assert_held(&vroce_net_lock);

	sock = vroce_udp_open(net, false);
	if (IS_ERR(sock))
		goto err;
	vn->sock4 = sock;

	sock = vroce_udp_open(net, true);
	if (IS_ERR(sock)) {
		/* A kernel or namespace without IPv6 still gets RoCEv2/IPv4. */
		if (PTR_ERR(sock) == -EAFNOSUPPORT)
			return 0;
		vroce_net_close(vn);
		goto err;
	}
	vn->sock6 = sock;
	return 0;

err:
	if (PTR_ERR(sock) == -EADDRINUSE)
		vroce_net_port_taken(net);
	else
		pr_err("cannot open the RoCEv2 UDP socket on port %u: %pe\n",
		       VROCE_ROCE_V2_UDP_PORT, sock);
	return PTR_ERR(sock);
}

/**
 * vroce_net_get - make sure @net has its RoCEv2 sockets, and hold them
 * @net: the namespace of a device's netdev
 *
 * Context: process context, may sleep.
 * Return: 0, or a negative errno (-EADDRINUSE if port 4791 is taken).
 */
int vroce_net_get(struct net *net)
{
	struct vroce_net *vn = vroce_net(net);
	int err = 0;

	mutex_lock(&vroce_net_lock);
	if (!vn->users)
		err = vroce_net_open(net, vn);
	if (!err)
		WRITE_ONCE(vn->users, vn->users + 1);
	mutex_unlock(&vroce_net_lock);
	return err;
}

/**
 * vroce_net_put - release what vroce_net_get() took
 * @net: the namespace passed to vroce_net_get()
 *
 * Context: process context, may sleep.
 */
void vroce_net_put(struct net *net)
{
	struct vroce_net *vn = vroce_net(net);
	unsigned int users;

	mutex_lock(&vroce_net_lock);
	users = vn->users;
	if (WARN_ON(!users))
		goto out;
	if (users == 1)
		vroce_net_close(vn);
	/* Last touch of @vn: the namespace exit may free it from here on. */
	WRITE_ONCE(vn->users, users - 1);
	if (users == 1)
		wake_up_all(&vroce_net_wq);
out:
	mutex_unlock(&vroce_net_lock);
}

static void __net_exit vroce_net_exit_net(struct net *net)
{
	struct vroce_net *vn = vroce_net(net);

	/*
	 * The netdevs of the namespace are gone and their vroce devices are
	 * being unregistered from vroce's work queue; wait for them (bounded:
	 * see the top of this file).
	 */
	wait_event(vroce_net_wq, !READ_ONCE(vn->users));
}

static struct pernet_operations vroce_net_ops = {
	.exit = vroce_net_exit_net,
	.id = &vroce_net_id,
	.size = sizeof(struct vroce_net),
};

/**
 * vroce_net_init - register the namespace state and claim port 4791 in init_net
 *
 * Return: 0, or -EADDRINUSE when rdma_rxe (or anything else) holds the port.
 */
int vroce_net_init(void)
{
	int err;

	err = register_pernet_subsys(&vroce_net_ops);
	if (err)
		return err;

	err = vroce_net_get(&init_net);
	if (err) {
		unregister_pernet_subsys(&vroce_net_ops);
		return err;
	}
	return 0;
}

void vroce_net_exit(void)
{
	vroce_net_put(&init_net);
	unregister_pernet_subsys(&vroce_net_ops);
}
