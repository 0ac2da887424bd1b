/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_AH_H
#define _VROCE_AH_H

#include <linux/if_ether.h>
#include <rdma/ib_verbs.h>

struct vroce_dev;
struct vroce_pkt_info;
struct rxe_av;

/**
 * struct vroce_ah - an address handle
 * @ibah: the ib_core AH; ib_core allocates it, holds ibah.sgid_attr for
 *	its lifetime and kfree()s it as soon as destroy_ah returns
 * @attr: the address vector as created (grh.sgid_attr cleared; RoCE:
 *	roce.dmac resolved by ib_core or the kernel consumer)
 * @ah_num: its number in vroce_dev.ahs (the rxe uABI's ah_num), > 0
 */
struct vroce_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;
	u32 ah_num;
};

static inline struct vroce_ah *to_vah(struct ib_ah *ibah)
{
	return container_of(ibah, struct vroce_ah, ibah);
}

/**
 * struct vroce_ah_av - what a datagram send takes from an AH
 * @sgid_attr: the source GID, held (vroce_ah_av_put())
 * @dgid: the destination GID
 * @dmac: the destination MAC
 * @flow_label: GRH flow label
 * @traffic_class: GRH traffic class
 * @hop_limit: GRH hop limit
 * @sl: service level
 */
struct vroce_ah_av {
	const struct ib_gid_attr *sgid_attr;
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u32 flow_label;
	u8 traffic_class;
	u8 hop_limit;
	u8 sl;
};

/* ah.c APIs: */
void vroce_ah_dev_init(struct vroce_dev *vdev);
void vroce_ah_dev_uninit(struct vroce_dev *vdev);
int vroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int vroce_destroy_ah(struct ib_ah *ibah, u32 flags);
int vroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int vroce_ah_av_get(struct vroce_dev *vdev, struct ib_pd *pd, u32 ah_num,
		    struct vroce_ah_av *av);
int vroce_ah_av_from_user(struct vroce_dev *vdev, const struct rxe_av *uav,
			  struct vroce_ah_av *av);
void vroce_ah_av_put(struct vroce_ah_av *av);
void vroce_ah_av_to_pkt(const struct vroce_ah_av *av,
			struct vroce_pkt_info *pi);

#endif /* _VROCE_AH_H */
