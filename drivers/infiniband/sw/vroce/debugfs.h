/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_DEBUGFS_H
#define _VROCE_DEBUGFS_H

struct vroce_dev;

/* debugfs.c APIs: */
void vroce_debugfs_init(void);
void vroce_debugfs_exit(void);
void vroce_debugfs_dev_add(struct vroce_dev *vdev);
void vroce_debugfs_dev_del(struct vroce_dev *vdev);

#endif /* _VROCE_DEBUGFS_H */
