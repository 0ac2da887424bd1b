// SPDX-License-Identifier: GPL-2.0
/*
 * Protection domains. A PD holds no state of its own yet; the device counts
 * them (vroce_dev.num_pds, atomic) to enforce attrs.max_pd.
 */

#include "device.h"
#include "pd.h"

int vroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibpd->device);

	if (atomic_inc_return(&vdev->num_pds) > vdev->attr.max_pd) {
		atomic_dec(&vdev->num_pds);
		return -ENOMEM;
	}
	return 0;
}

int vroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibpd->device);

	atomic_dec(&vdev->num_pds);
	return 0;
}
