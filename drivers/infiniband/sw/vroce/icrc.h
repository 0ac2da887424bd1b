/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_ICRC_H
#define _VROCE_ICRC_H

#include <linux/types.h>

#include "pkt.h"

/* icrc.c APIs: */
void vroce_icrc_init(void);
void vroce_icrc_exit(void);
u32 vroce_icrc(enum vroce_net_type type, const void *l3, unsigned int len);

#endif /* _VROCE_ICRC_H */
