/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_MW_H
#define _VROCE_MW_H

#include <rdma/ib_verbs.h>

struct vroce_dev;
struct vroce_mr;
struct vroce_qp;

/* Access bits a window can grant; IB_ACCESS_LOCAL_WRITE is accepted and
 * means nothing for a window (rdma-core passes it, rxe accepts it).
 */
#define VROCE_MW_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

/**
 * struct vroce_mw - a memory window (type 1 or type 2B)
 * @ibmw: the ib_core MW; ib_core allocates it and kfree()s it as soon as
 *	dealloc_mw returns
 * @key: the current rkey: VROCE_KEY_MW | index << 8 | variant
 * @mr: the MR the window is bound to, or NULL while unbound
 * @addr: first address of the window, in @mr's iova space
 * @length: bytes in the window
 * @access: IB_ACCESS_REMOTE_* the window grants
 * @qpn: type 2B: the QP number the window is bound to
 *
 * Every field but @ibmw is protected by vroce_dev.mws' lock (mw.c).
 */
struct vroce_mw {
	struct ib_mw ibmw;
	u32 key;
	struct vroce_mr *mr;
	u64 addr;
	u64 length;
	int access;
	u32 qpn;
};

/**
 * struct vroce_mw_bind - a Bind Memory Window request (IB_WR_BIND_MW)
 * @mw_rkey: the window's current rkey
 * @new_rkey: the rkey after the bind; only its variant byte is used
 * @mr_lkey: the lkey of the MR to bind to (ignored when @length is 0)
 * @addr: first address of the window, in the MR's iova space
 * @length: bytes; 0 unbinds a type 1 window
 * @access: IB_ACCESS_* for the window
 *
 * All fields come from a WQE and are untrusted.
 */
struct vroce_mw_bind {
	u32 mw_rkey;
	u32 new_rkey;
	u32 mr_lkey;
	u64 addr;
	u64 length;
	u32 access;
};

static inline struct vroce_mw *to_vmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct vroce_mw, ibmw);
}

/* mw.c APIs: */
void vroce_mw_dev_init(struct vroce_dev *vdev);
void vroce_mw_dev_uninit(struct vroce_dev *vdev);
int vroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int vroce_dealloc_mw(struct ib_mw *ibmw);
int vroce_mw_bind(struct vroce_qp *qp, const struct vroce_mw_bind *bind);
int vroce_mw_invalidate(struct vroce_dev *vdev, struct ib_qp *ibqp, u32 rkey,
			bool remote);
struct vroce_mr *vroce_mw_rkey_get(struct vroce_dev *vdev, struct ib_qp *ibqp,
				   u32 rkey, u64 va, u64 len, int access);
void vroce_mw_qp_destroyed(struct vroce_dev *vdev, u32 qpn);

#endif /* _VROCE_MW_H */
